package signature_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/civicgate/civicgate/modules/webhooks/signature"
)

// TestAcceptedByStandardWebhooksLibrary checks our headers with the official
// Go verifier (an independent implementation).
func TestAcceptedByStandardWebhooksLibrary(t *testing.T) {
	secret, err := signature.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	key, err := signature.Key(secret)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"id":"e1","type":"bills.updated"}`)
	h := http.Header{}
	signature.SetHeaders(h, [][]byte{key}, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", time.Now(), body)
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(body, h); err != nil {
		t.Fatalf("library refused our signature: %v", err)
	}
	if h.Get(signature.HeaderService) != h.Get(signature.HeaderSignature) {
		t.Fatal("X-Service-Signature differs from webhook-signature")
	}
	// A tampered body or another secret fails (the check can fail).
	if err := wh.Verify(append(body, ' '), h); err == nil {
		t.Fatal("tampered body verified")
	}
	other, _ := signature.NewSecret()
	wh2, _ := standardwebhooks.NewWebhook(other)
	if err := wh2.Verify(body, h); err == nil {
		t.Fatal("verified with another secret")
	}
	// Same bytes as the library's own signer.
	ts := time.Unix(1_700_000_000, 0)
	want, _ := wh.Sign("msg_1", ts, body)
	if got := signature.Sign(key, "msg_1", ts, body); got != want {
		t.Fatalf("signature %s, library %s", got, want)
	}
}

// TestTwoSignaturesDuringRotation: both the old and the new secret verify.
func TestTwoSignaturesDuringRotation(t *testing.T) {
	oldS, _ := signature.NewSecret()
	newS, _ := signature.NewSecret()
	ok, _ := signature.Key(oldS)
	nk, _ := signature.Key(newS)
	body := []byte(`{}`)
	h := http.Header{}
	signature.SetHeaders(h, [][]byte{nk, ok}, "msg_x", time.Now(), body)
	if n := len(strings.Split(h.Get(signature.HeaderSignature), " ")); n != 2 {
		t.Fatalf("%d signatures", n)
	}
	for _, s := range []string{oldS, newS} {
		wh, _ := standardwebhooks.NewWebhook(s)
		if err := wh.Verify(body, h); err != nil {
			t.Fatalf("secret refused: %v", err)
		}
	}
}

func TestKeyRejectsMalformedSecrets(t *testing.T) {
	for _, s := range []string{"", "whsec_", "whsec_!!!", "sec_" + strings.Repeat("A", 44), "whsec_AAAA"} {
		if _, err := signature.Key(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}
