package auth

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/testkit/adapttest"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/internal/testkit/testidp"
	"github.com/civicgate/civicgate/modules/auth/accesstoken"
	"github.com/civicgate/civicgate/modules/contract"
)

// TestTokenFailedLookups: forged tokens count against the client's
// failed_lookups budget like unknown keys; past it, every token not already
// resolved gets 429 before any signature is checked, while a resolved one
// keeps working. Genuine tokens are refunded.
func TestTokenFailedLookups(t *testing.T) {
	g := startTokenGateway(t, tokenGatewayConfig{authOptions: "failed_lookups 3/m"})
	known := g.token(idpRSAKey, "auth0|known", "enterprise", time.Hour, nil)
	for i := range 5 { // first sights, all genuine: refunded
		tok := known
		if i > 0 {
			tok = g.token(idpRSAKey, fmt.Sprintf("auth0|genuine-%d", i), "free", time.Hour, nil)
		}
		if got := get(t, g.base+"/bills", "Authorization", "Bearer "+tok); got.status != 200 {
			t.Fatalf("genuine token %d: %d %q", i, got.status, got.body)
		}
	}
	forged := testidp.Sign(idpForgeKey, g.idp.claims("auth0|known", "enterprise", g.acme.OrgID, time.Hour))
	for range 3 {
		expectTokenRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+forged), 401, `{"error":"Invalid access token signature"}`,
			tokenChallenge("invalid_token", "Invalid access token signature"))
	}
	for _, tok := range []string{forged, g.token(idpRSAKey, "auth0|new", "free", time.Hour, nil)} {
		got := get(t, g.base+"/bills", "Authorization", "Bearer "+tok)
		expectTokenRefusal(t, got, 429, `{"error":"Rate limit exceeded"}`, "")
		if ra := got.header.Get("Retry-After"); ra != "20" {
			t.Fatalf("Retry-After %q, want 20 (3/m: one every 20 s)", ra)
		}
	}
	if got := get(t, g.base+"/bills", "Authorization", "Bearer "+known); got.status != 200 {
		t.Fatalf("a token resolved before the flood: %d %q", got.status, got.body)
	}
	if n := g.app(t).tokens.verifier.Stats().Refused[accesstoken.BadSignature]; n != 3 {
		t.Fatalf("%d signatures checked and refused, want 3 (the throttled never verified)", n)
	}
}

// TestTokenCaddyfileErrors: a malformed jwt block is refused by the adapter,
// naming the option.
func TestTokenCaddyfileErrors(t *testing.T) {
	jwtBlock := func(lines string) string {
		return global("jwt {\nissuer https://idp.example.com/\naudience https://api.example.com\n" + lines + "\n}")
	}
	adapttest.Refused(t, map[string]adapttest.Refusal{
		"jwt unknown option":   {jwtBlock("issuerr x"), `unknown option "issuerr"`},
		"jwt given twice":      {global("jwt {\nissuer https://a\n}\njwt {\nissuer https://b\n}"), "civic_auth: jwt given twice"},
		"jwt argument":         {global("jwt extra {\nissuer https://a\n}"), "wrong argument count or unexpected line ending after 'extra'"},
		"issuer twice":         {jwtBlock("issuer https://other.example.com/"), "issuer given twice"},
		"scope_tier one value": {jwtBlock("scope_tier api:read"), "wrong argument count or unexpected line ending after 'api:read'"},
		"leeway over 5m":       {jwtBlock("leeway 6m"), `jwt: leeway: "6m": want a duration from 0 to 5m0s`},
		"leeway negative":      {jwtBlock("leeway -1s"), `jwt: leeway: "-1s": want a duration from 0 to 5m0s`},
		"max_token_size small": {jwtBlock("max_token_size 100"), `max_token_size: want`},
		"jwks_cache_min zero":  {jwtBlock("jwks_cache_min 0s"), `jwks_cache_min: want a duration above zero, got "0s"`},
		"cache_size zero":      {jwtBlock("cache_size 0"), `cache_size: want a positive integer, got "0"`},
	})
	adapttest.Adapts(t, jwtBlock("scope_tier api:read free\nrequire_scope changes changes:read\nleeway 0s\nmax_token_size 16384\nfetch_timeout 1m"))
}

// TestTokenProvisionErrors: a jwt block the adapter accepts but the verifier
// cannot run with is a provision error, naming the option, the value or the
// URL that failed.
func TestTokenProvisionErrors(t *testing.T) {
	idpKeys()
	p := newTokenIdP(t, idpRSAKey)
	good := "issuer " + p.Issuer() + "\naudience " + tokenAudience + "\ntier_claim plan\n"
	if err := provisionCaddyfile(t, jwtCaddyfile(good)); err != nil {
		t.Fatalf("the control configuration: %v", err)
	}
	dead := "http://127.0.0.1:" + fmt.Sprint(testenv.FreePort(t))
	for name, c := range map[string]struct{ jwt, want string }{
		"HS256":                    {good + "algorithms RS256 HS256", `algorithms: "HS256" is symmetric`},
		"none":                     {good + "algorithms none", `algorithms: "none": unsigned tokens are never accepted`},
		"missing issuer":           {"audience " + tokenAudience + "\ntier_claim plan", "issuer: required"},
		"missing audience":         {"issuer " + p.Issuer() + "\ntier_claim plan", "audience: required"},
		"unknown default_tier":     {good + "default_tier gold", `default_tier: unknown tier "gold" (tiers: enterprise, free)`},
		"unknown scope_tier tier":  {"issuer " + p.Issuer() + "\naudience a\nscope_tier api:gold gold", `scope_tier: scope "api:gold": unknown tier "gold"`},
		"tier_claim and scope":     {good + "scope_tier api:read free", "give tier_claim or scope_tier lines, not both"},
		"no tier source":           {"issuer " + p.Issuer() + "\naudience a", "default_tier: required without tier_claim or scope_tier"},
		"bad require_scope family": {good + "require_scope Bills bills:read", `civic_auth: jwt require_scope: bad family "Bills"`},
		"require_scope twice":      {good + "require_scope bills a\nrequire_scope bills b", `require_scope: family "bills" given twice`},
		"issuer over plain http":   {"issuer http://idp.example.com\naudience a\ntier_claim plan", "issuer: "},
		"JWKS unreachable":         {good + "jwks_url " + dead + "/jwks", dead + "/jwks"},
		"discovery unreachable":    {"issuer " + dead + "\naudience a\ntier_claim plan", dead},
	} {
		t.Run(name, func(t *testing.T) {
			err := provisionCaddyfile(t, jwtCaddyfile(c.jwt))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestTokenRequireFamilyLacksScope: require_family on a family whose
// require_scope scope the token lacks answers docs/identity.md's
// insufficient_scope refusal — its body, and a challenge naming the scope
// the client must ask for (RFC 6750 §3.1) — and names the family (D41).
func TestTokenRequireFamilyLacksScope(t *testing.T) {
	g := startTokenGateway(t, tokenGatewayConfig{})
	tok := g.token(idpRSAKey, "auth0|unscoped", "enterprise", time.Hour, map[string]any{"scope": "openid"})
	const reason = "Access token lacks the scope this endpoint family requires"
	got := get(t, g.base+"/changes", "Authorization", "Bearer "+tok)
	expectTokenRefusal(t, got, 403, `{"error":"`+reason+`"}`, tokenChallenge("insufficient_scope", reason)+`, scope="changes:read"`)
	if v := got.header.Values(contract.HeaderRefusedFamily); len(v) != 1 || v[0] != "changes" {
		t.Fatalf("%s %q", contract.HeaderRefusedFamily, v)
	}
}

// TestTokenOfWithdrawnKeyRefused: once a key set refresh no longer lists the
// key a token was signed with, the token is refused — also one the gateway
// resolved before (docs/identity.md "How a token is checked": a cached
// answer holds while "its key the issuer still publishes").
func TestTokenOfWithdrawnKeyRefused(t *testing.T) {
	g := startTokenGateway(t, tokenGatewayConfig{})
	tok := g.token(idpECKey, "auth0|withdrawn", "enterprise", time.Hour, nil)
	if got := get(t, g.base+"/bills", "Authorization", "Bearer "+tok); got.status != 200 {
		t.Fatalf("%d %q", got.status, got.body)
	}
	g.idp.SetKeys(idpRSAKey, idpEdKey)
	v := g.app(t).tokens.verifier
	// An unknown kid refreshes the set, at most once per 10 s.
	testenv.EventuallyTrue(t, notifyWithin, "a key set refresh", func() bool {
		get(t, g.base+"/bills", "Authorization", "Bearer "+g.token(testidp.Key{KID: "rsa-next", Alg: "RS256", Signer: idpRSA}, "auth0|x", "free", time.Hour, nil))
		return v.Stats().KeySetRefreshes >= 2
	})
	if _, err := v.Verify(context.Background(), tok); err == nil || err.(*accesstoken.Error).Kind != accesstoken.UnknownKey {
		t.Fatalf("the verifier: %v, want unknown_key", err)
	}
	expectTokenRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+tok), 401, `{"error":"Access token signed by an unknown key"}`,
		tokenChallenge("invalid_token", "Access token signed by an unknown key"))
}

// TestTokenWithoutJWTBlock: a gateway without a jwt block answers a JWT as it
// always did — not the shape of a key: a malformed header (docs/identity.md
// "In the gateway").
func TestTokenWithoutJWTBlock(t *testing.T) {
	dsn, _ := migratedDB(t)
	g := startGateway(t, dsn, "1s")
	idpKeys()
	p := newTokenIdP(t, idpRSAKey)
	tok := testidp.Sign(idpRSAKey, p.claims("auth0|user-1", "free", "", time.Hour))
	expectRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+tok), 401, `{"error":"Malformed authorization header"}`)
}

// TestTokenLeewayZero: `leeway 0` means no leeway (docs/identity.md
// "Options"), not the 30 s default: a token expired 5 s ago is refused.
func TestTokenLeewayZero(t *testing.T) {
	g := startTokenGateway(t, tokenGatewayConfig{jwtOptions: "leeway 0s"})
	now := time.Now()
	tok := g.token(idpRSAKey, "auth0|late", "enterprise", time.Hour, map[string]any{"exp": now.Add(-5 * time.Second).Unix(), "iat": now.Add(-time.Minute).Unix()})
	expectTokenRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+tok), 401, `{"error":"Access token expired"}`,
		tokenChallenge("invalid_token", "Access token expired"))
}

// TestTokenJWKSCacheMinShort: jwks_cache_min below the 10 s refresh interval
// provisions (the interval is at most jwks_cache_min, docs/identity.md), and
// no error names jwks_refresh_min_interval, which no Caddyfile can set.
func TestTokenJWKSCacheMinShort(t *testing.T) {
	idpKeys()
	p := newTokenIdP(t, idpRSAKey)
	err := provisionCaddyfile(t, jwtCaddyfile("issuer "+p.Issuer()+"\naudience a\ntier_claim plan\njwks_cache_min 5s"))
	if err != nil {
		t.Fatalf("jwks_cache_min 5s: %v", err)
	}
}

// TestTokenProvisionErrorSaysJWTOnce: a provision error of the jwt block
// reads "civic_auth: jwt: <option>: …", not "jwt: jwt:".
func TestTokenProvisionErrorSaysJWTOnce(t *testing.T) {
	err := provisionCaddyfile(t, jwtCaddyfile("audience a\ntier_claim plan"))
	if err == nil || !strings.Contains(err.Error(), "civic_auth: jwt: issuer: required") {
		t.Fatalf("error %v, want one containing %q", err, "civic_auth: jwt: issuer: required")
	}
}

// TestTokenBearerGoesToTheTokenPath: with a jwt block, a bearer value
// without the cg_ prefix is an access token (docs/caddyfile.md): a genuine
// one is admitted, a forged one refused as a token — not as a malformed
// Authorization header, which is what an API key of the wrong shape gets.
func TestTokenBearerGoesToTheTokenPath(t *testing.T) {
	idpKeys()
	p := newTokenIdP(t, idpRSAKey)
	h := &Handler{app: tokenApp(t, p, 0), logger: zap.NewNop()}
	serve := func(tok string) (*httptest.ResponseRecorder, bool) {
		r := httptest.NewRequest(http.MethodGet, "/bills", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		admitted := false
		rec := httptest.NewRecorder()
		if err := h.ServeHTTP(rec, r, nextFunc(func(http.ResponseWriter, *http.Request) error { admitted = true; return nil })); err != nil {
			t.Fatal(err)
		}
		return rec, admitted
	}
	if rec, ok := serve(benchToken(p, idpRSAKey, "auth0|unit")); !ok {
		t.Fatalf("a genuine token: %d %q", rec.Code, rec.Body.String())
	}
	rec, ok := serve(benchToken(p, idpForgeKey, "auth0|unit"))
	if ok || rec.Code != 401 || rec.Body.String() != `{"error":"Invalid access token signature"}` {
		t.Fatalf("a forged token: admitted %v, %d %q", ok, rec.Code, rec.Body.String())
	}
	if rec, _ := serve("cg_live_short"); rec.Body.String() != `{"error":"Malformed authorization header"}` {
		t.Fatalf("a malformed API key: %d %q", rec.Code, rec.Body.String())
	}
}

// TestTokenWatchPastExp: a watch opened on a token already past its exp
// (admitted within the leeway) fires at once with "token expired" — its
// timer's function may run before WatchCredential returns (go test -race).
func TestTokenWatchPastExp(t *testing.T) {
	idpKeys()
	a := tokenApp(t, newTokenIdP(t, idpRSAKey), 0)
	rt := a.tokens.newResolvedToken(accesstoken.Identity{Subject: "auth0|late", Organization: "org_x", Tier: "enterprise",
		Expiry: time.Now().Add(-time.Second), Issuer: "https://idp.example", KeyID: "jwt:sub:auth0|late"}, "org_x")
	for range 5000 {
		w := rt.WatchCredential()
		select {
		case <-w.Done():
		case <-time.After(notifyWithin):
			t.Fatal("the watch of an expired token did not fire")
		}
		if w.Reason() != "token expired" {
			t.Fatalf("Reason %q", w.Reason())
		}
	}
}
