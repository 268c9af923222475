package accesstoken

import (
	"errors"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/testidp"
)

// signingInput is a compact token's header.payload.
func signingInput(tok string) string {
	i := strings.LastIndexByte(tok, '.')
	if i < 0 {
		return tok
	}
	return tok[:i]
}

// FuzzVerify: no input panics; every error is a refusal of a known kind;
// an accepted token carries exactly the header and payload of a token the
// issuer signed (a signature can vary — ECDSA's — the claims cannot); the
// attacker's server is never asked.
func FuzzVerify(f *testing.F) {
	p := testidp.Start(f, hostileSigners()...)
	attacker, attackerHits := attackerServer(f)
	clock := newClock()
	cfg := testConfig(p, clock)
	cfg.CacheSize = 64
	v := newVerifier(f, cfg)
	signed := map[string]bool{}
	for _, tc := range hostileCases(p, attacker, clock.Now()) {
		f.Add(tc.token)
		if tc.kind == 0 {
			signed[signingInput(tc.token)] = true
		}
	}
	f.Fuzz(func(t *testing.T, tok string) {
		id, err := v.Verify(t.Context(), tok)
		if err == nil {
			if !signed[signingInput(tok)] {
				t.Fatalf("accepted a token the issuer never signed: %q", tok)
			}
			if id.Tier == "" || id.Subject == "" || id.KeyID == "" {
				t.Fatalf("accepted with identity %+v", id)
			}
		} else {
			var e *Error
			if !errors.As(err, &e) || !e.Kind.valid() || e.Kind == InsufficientScope {
				t.Fatalf("error %v (%T) is not a refusal Verify returns", err, err)
			}
			if id.Subject != "" {
				t.Fatalf("refused with identity %+v", id)
			}
		}
		if n := attackerHits.Load(); n != 0 {
			t.Fatalf("the attacker's server was asked %d times", n)
		}
	})
}
