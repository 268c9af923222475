package e2e

import (
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/internal/testkit/testidp"
	"github.com/civicgate/civicgate/modules/contract"
)

// testJWTRefusals: every refusal of a token with its exact body and RFC 6750
// challenge (docs/identity.md "Errors").
func testJWTRefusals(t *testing.T, g *jwtStack, client, other, otherAudience string) {
	s := g.s
	good := g.token(t, client)
	if x := getBills(t, s, good); x.status != http.StatusOK {
		t.Fatalf("a good enterprise token: %d %s", x.status, x.body)
	}
	p := decodeJWT(t, good)
	seg := strings.Split(good, ".")

	t.Run("missing bearer", func(t *testing.T) {
		wantRefusal(t, "no Authorization", getBills(t, s, ""), http.StatusUnauthorized, contract.MsgMissingBearer, g.challenge(""))
	})
	t.Run("wrong audience", func(t *testing.T) {
		tok := g.idp.Token(t, other, jwtClientSecret, []string{otherAudience}, nil)
		g.keep(tok)
		if aud := decodeJWT(t, tok).claims["aud"]; fmt.Sprint(aud) != "["+otherAudience+"]" {
			t.Fatalf("Hydra's token for the other API has aud %v", aud)
		}
		wantRefusal(t, "a token for another API", getBills(t, s, tok), http.StatusUnauthorized,
			"Access token not issued for this API", g.invalidToken("Access token not issued for this API"))
	})
	t.Run("alg none", func(t *testing.T) {
		for _, alg := range []string{"none", "None"} {
			h := `{"alg":"` + alg + `","typ":"JWT","kid":"` + p.kid() + `"}`
			tok := g.keep(b64u([]byte(h)) + "." + seg[1] + ".")
			wantRefusal(t, "alg "+alg, getBills(t, s, tok), http.StatusUnauthorized,
				"Access token signing algorithm not accepted", g.invalidToken("Access token signing algorithm not accepted"))
		}
	})
	t.Run("HS256 keyed with the RSA public key", func(t *testing.T) {
		pemKey := publicPEM(t, publishedRSAKey(t, g.idp.JWKSURL(), p.kid()))
		h := `{"alg":"HS256","typ":"JWT","kid":"` + p.kid() + `"}`
		tok := g.keep(testidp.SignRaw(h, mustJSON(t, p.claims), jwt.SigningMethodHS256, pemKey))
		wantRefusal(t, "HS256 keyed with the PEM", getBills(t, s, tok), http.StatusUnauthorized,
			"Access token signing algorithm not accepted", g.invalidToken("Access token signing algorithm not accepted"))
	})
	t.Run("tampered claims", func(t *testing.T) {
		claims := maps.Clone(p.claims)
		claims["plan"] = "enterprise"
		claims["sub"] = "someone-else"
		tok := g.keep(seg[0] + "." + b64u([]byte(mustJSON(t, claims))) + "." + seg[2])
		wantRefusal(t, "the payload changed under Hydra's signature", getBills(t, s, tok), http.StatusUnauthorized,
			"Invalid access token signature", g.invalidToken("Invalid access token signature"))
	})
	t.Run("expired", func(t *testing.T) {
		// A token signed by another key, exp an hour ago: exp is checked
		// before any key is looked up.
		now := time.Now()
		tok := g.keep(testidp.SignRaw(`{"alg":"RS256","typ":"JWT","kid":"`+p.kid()+`"}`, mustJSON(t, map[string]any{
			"iss": g.idp.Issuer(), "aud": []string{g.audience}, "sub": client, "org_id": "x", "plan": "enterprise",
			"iat": now.Add(-2 * time.Hour).Unix(), "exp": now.Add(-time.Hour).Unix(),
		}), jwt.SigningMethodRS256, testidp.NewKey(t, "RS256")))
		wantRefusal(t, "exp an hour ago", getBills(t, s, tok), http.StatusUnauthorized,
			"Access token expired", g.invalidToken("Access token expired"))

		// Hydra's own token of a client whose tokens live 3 s: served, then
		// refused once its exp has passed (leeway 0).
		short := "svc-short-" + testenv.RandomSuffix(6)
		g.client(t, short, map[string]any{"plan": "enterprise", "org_id": "idp-org-short"})
		g.setLifespan(t, short, 3*time.Second)
		tok = g.token(t, short)
		exp := decodeJWT(t, tok).exp()
		if life := time.Until(exp); life > 5*time.Second {
			t.Fatalf("the short-lived client's token lives %s", life)
		}
		if x := getBills(t, s, tok); x.status != http.StatusOK && time.Now().Before(exp) {
			t.Fatalf("a live short token: %d %s", x.status, x.body)
		}
		var last exchange
		stack.WaitFor(t, 60*time.Second, "the short token refused as expired", func() error {
			last = getBills(t, s, tok)
			if last.status == http.StatusOK {
				return fmt.Errorf("still served %s after its exp", time.Since(exp).Round(time.Millisecond))
			}
			return nil
		})
		t.Logf("refused %s after its exp (second-resolution exp)", time.Since(exp).Round(time.Millisecond))
		wantRefusal(t, "Hydra's expired token", last, http.StatusUnauthorized, "Access token expired", g.invalidToken("Access token expired"))
	})
}
