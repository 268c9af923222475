package webhooks_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/webhooks/signature"
)

// Verify is the standard-library-only verifier of README.md ("Verifying
// deliveries") and docs/webhooks.md ("Verifying a delivery"), kept here
// verbatim so the documented code is compiled and tested against what the
// sidecar sends.
func Verify(secret string, h http.Header, body []byte, now time.Time) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return errors.New("bad secret")
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if id == "" || err != nil {
		return errors.New("missing webhook headers")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return errors.New("timestamp outside tolerance")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		v, b64, ok := strings.Cut(sig, ",")
		if !ok || v != "v1" {
			continue
		}
		if got, err := base64.StdEncoding.DecodeString(b64); err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return errors.New("no matching signature")
}

func TestReadmeVerifier(t *testing.T) {
	oldS, _ := signature.NewSecret()
	newS, _ := signature.NewSecret()
	ok, _ := signature.Key(oldS)
	nk, _ := signature.Key(newS)
	body := []byte(`{"id":"e","type":"bills.created"}`)
	now := time.Now()
	h := http.Header{}
	signature.SetHeaders(h, [][]byte{nk, ok}, "0b6c5c9e-6a55-4f0e-9d1e-1d2f3a4b5c6d", now, body)
	for _, s := range []string{oldS, newS} {
		if err := Verify(s, h, body, now); err != nil {
			t.Fatalf("README verifier refused a real signature: %v", err)
		}
	}
	other, _ := signature.NewSecret()
	if Verify(other, h, body, now) == nil || Verify(newS, h, append(body, '\n'), now) == nil || Verify(newS, h, body, now.Add(6*time.Minute)) == nil {
		t.Fatal("README verifier accepted a wrong secret, body or time")
	}
}
