package auth

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/internal/testkit/testidp"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

// TestTokenAdmitted: a token of the IdP, signed with each of the accepted
// algorithms, is served like a key — {civic.*} placeholders, the request
// value (caller, bearer, watcher), X-Civic-Identity upstream, no
// Authorization — with the tier its plan claim names and the tier's families
// less the require_scope families whose scope it lacks. API keys keep
// working beside tokens.
func TestTokenAdmitted(t *testing.T) {
	g := startTokenGateway(t, tokenGatewayConfig{})
	org := g.acme.OrgID
	for _, k := range []testidp.Key{idpRSAKey, idpECKey, idpEdKey} {
		t.Run(k.Alg, func(t *testing.T) {
			sub := "auth0|user-" + k.KID
			tok := g.token(k, sub, "enterprise", time.Hour, nil)
			got := get(t, g.base+"/echo", "Authorization", "Bearer "+tok)
			if want := "jwt:sub:" + sub + "|" + org + "|enterprise|live|1000/m,100000/d|bills,members|500000/h"; got.status != 200 || got.body != want {
				t.Fatalf("placeholders: %d %q, want %q", got.status, got.body, want)
			}
		})
	}

	scoped := g.token(idpRSAKey, "auth0|scoped", "enterprise", time.Hour, map[string]any{"scope": "openid changes:read"})
	if got, want := get(t, g.base+"/echo", "Authorization", "Bearer "+scoped), "jwt:sub:auth0|scoped|"+org+"|enterprise|live|1000/m,100000/d|bills,members,changes|500000/h"; got.body != want {
		t.Fatalf("with the changes:read scope: %d %q, want %q", got.status, got.body, want)
	}
	if got := get(t, g.base+"/changes", "Authorization", "Bearer "+scoped); got.status != 200 || got.body != "changes ok" {
		t.Fatalf("require_family changes with the scope: %d %q", got.status, got.body)
	}
	free := g.token(idpRSAKey, "auth0|free", "free", time.Hour, map[string]any{"scope": "changes:read"})
	if got, want := get(t, g.base+"/echo", "Authorization", "Bearer "+free), "jwt:sub:auth0|free|"+org+"|free|live|30/m|bills,members|"; got.body != want {
		t.Fatalf("free tier: %d %q, want %q", got.status, got.body, want)
	}
	got := get(t, g.base+"/changes", "Authorization", "Bearer "+free)
	expectTokenRefusal(t, got, 403, `{"error":"Tier not entitled to this endpoint family"}`, "")
	if v := got.header.Values(contract.HeaderRefusedFamily); len(v) != 1 || v[0] != "changes" {
		t.Fatalf("%s %q", contract.HeaderRefusedFamily, v)
	}

	// A subject that would need escaping stands as a hash in the key id.
	odd := g.token(idpRSAKey, "user name/with spaces", "free", time.Hour, nil)
	sum := sha256Hex(g.idp.Issuer() + "\x00" + "user name/with spaces")
	if got := get(t, g.base+"/echo", "Authorization", "Bearer "+odd); !strings.HasPrefix(got.body, "jwt:hash:"+sum[:32]+"|") {
		t.Fatalf("key id of an unusual subject: %d %q", got.status, got.body)
	}

	t.Run("upstream", func(t *testing.T) {
		tok := g.token(idpRSAKey, "auth0|upstream", "enterprise", time.Hour, nil)
		forged, err := contract.SignIdentity([]byte(testSecret), contract.Caller{KeyID: "key_forged", Org: "evil", Tier: "enterprise", Env: "live"}, time.Now(), 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got := get(t, g.base+"/bills?q=x", "Authorization", "Bearer "+tok, "X-Civic-Identity", forged, "X-Civic-Tier", "enterprise", "X-Other", "kept")
		if got.status != 200 || got.body != "upstream ok" {
			t.Fatalf("%d %q", got.status, got.body)
		}
		up := g.upstream.last(t)
		if v := up.header.Values("Authorization"); len(v) != 0 {
			t.Fatalf("Authorization forwarded: %q", v)
		}
		for k := range up.header {
			if strings.HasPrefix(k, "X-Civic-") && k != contract.IdentityHeader {
				t.Fatalf("client header %s forwarded", k)
			}
		}
		if up.header.Get("X-Other") != "kept" {
			t.Fatal("unrelated header dropped")
		}
		ids := up.header.Values(contract.IdentityHeader)
		if len(ids) != 1 || ids[0] == forged {
			t.Fatalf("identity header %q", ids)
		}
		claims, err := contract.VerifyIdentity([]byte(testSecret), ids[0], time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if claims.KeyID() != "jwt:sub:auth0|upstream" || claims.Org != org || claims.Tier != "enterprise" || claims.Env != "live" ||
			strings.Join(claims.Families, ",") != "bills,members" {
			t.Fatalf("claims %+v", claims)
		}
		sig := tok[strings.LastIndexByte(tok, '.')+1:]
		if strings.Contains(g.upstream.all(), sig) {
			t.Fatal("the token reached the upstream")
		}
		logs, err := os.ReadFile(g.logPath)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(logs), "/bills") {
			t.Fatalf("log capture is not working (no access log line):\n%s", logs)
		}
		if strings.Contains(string(logs), sig) {
			t.Fatal("the token appears in the logs")
		}
	})

	t.Run("request value", func(t *testing.T) {
		tok := g.token(idpECKey, "auth0|probe", "enterprise", time.Hour, map[string]any{"scope": "changes:read"})
		exp := time.Now().Add(time.Hour).Unix()
		a := g.probe(t, tok, "")
		want := contract.Caller{KeyID: "jwt:sub:auth0|probe", Org: org, Tier: "enterprise", Env: "live", Families: []string{"bills", "members", "changes"}}
		if fmt.Sprint(a.Caller) != fmt.Sprint(want) || !a.CallerIsToken {
			t.Fatalf("caller %+v (the token's own: %v), want %+v", a.Caller, a.CallerIsToken, want)
		}
		if a.Bearer != tok || a.Watcher != "*auth.resolvedToken" || a.Subject != "auth0|probe" || a.Expiry < exp-5 || a.Expiry > exp {
			t.Fatalf("bearer is the token: %v, watcher %s, subject %q, expiry %d (want ≈ %d)", a.Bearer == tok, a.Watcher, a.Subject, a.Expiry, exp)
		}
		for name, v := range map[string]string{contract.CivicKeyID: want.KeyID, contract.CivicOrg: org, contract.CivicTier: "enterprise",
			contract.CivicEnv: "live", contract.CivicRate: "1000/m,100000/d", contract.CivicFamilies: "bills,members,changes",
			contract.CivicCostBudget: "500000/h"} {
			if a.Placeholders[name] != v {
				t.Errorf("{%s} = %q, want %q", name, a.Placeholders[name], v)
			}
		}
		if len(a.Authorization) != 0 || len(a.Identity) != 1 {
			t.Fatalf("Authorization %q, X-Civic-Identity %q", a.Authorization, a.Identity)
		}
		if _, err := contract.VerifyIdentity([]byte(testSecret), a.Identity[0], time.Now()); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("keys beside tokens", func(t *testing.T) {
		if got := get(t, g.base+"/bills", "Authorization", "Bearer "+g.acme.Key); got.status != 200 {
			t.Fatalf("API key: %d %q", got.status, got.body)
		}
		unknown, err := keystore.NewKey("live")
		if err != nil {
			t.Fatal(err)
		}
		expectTokenRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+unknown), 401, `{"error":"Invalid API key"}`, tokenRealm)
		expectTokenRefusal(t, get(t, g.base+"/bills"), 401, `{"error":"Missing bearer token"}`, tokenRealm)
		expectTokenRefusal(t, get(t, g.base+"/bills", "Authorization", "Basic abc"), 401, `{"error":"Malformed authorization header"}`, tokenRealm)
	})
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestTokenRefusals: each kind of refusal answers its status, its fixed body
// and an RFC 6750 challenge naming the RFC 9728 metadata; none reaches the
// upstream.
func TestTokenRefusals(t *testing.T) {
	g := startTokenGateway(t, tokenGatewayConfig{})
	now := time.Now()
	claims := func(set map[string]any) map[string]any {
		c := g.idp.claims("auth0|user-1", "enterprise", g.acme.OrgID, time.Hour)
		for k, v := range set {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	pub, err := x509.MarshalPKIXPublicKey(idpRSA.Public())
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	const invalid, scope = "invalid_token", "insufficient_scope"
	for _, c := range []struct {
		name         string
		tok          string
		status       int
		code, reason string
	}{
		{"malformed", "abc.def.ghi", 401, invalid, "Malformed access token"},
		{"too large", testidp.Sign(idpRSAKey, claims(map[string]any{"pad": strings.Repeat("x", 9000)})), 401, invalid, "Access token too large"},
		{"alg none", testidp.SignHeader(map[string]any{"alg": "none", "kid": "rsa-1", "typ": "at+jwt"}, nil, claims(nil)), 401, invalid, "Access token signing algorithm not accepted"},
		{"HS256 keyed with the public key", testidp.SignHeader(map[string]any{"alg": "HS256", "kid": "rsa-1", "typ": "at+jwt"}, pubPEM, claims(nil)), 401, invalid, "Access token signing algorithm not accepted"},
		{"algorithm not listed", testidp.SignHeader(map[string]any{"alg": "PS256", "kid": "rsa-1", "typ": "at+jwt"}, idpRSA, claims(nil)), 401, invalid, "Access token signing algorithm not accepted"},
		{"unknown kid", testidp.Sign(testidp.Key{KID: "rsa-unknown", Alg: "RS256", Signer: idpRSA}, claims(nil)), 401, invalid, "Access token signed by an unknown key"},
		{"forged signature", testidp.Sign(idpForgeKey, claims(nil)), 401, invalid, "Invalid access token signature"},
		{"wrong issuer", testidp.Sign(idpRSAKey, claims(map[string]any{"iss": "https://evil.example"})), 401, invalid, "Access token from an untrusted issuer"},
		{"wrong audience", testidp.Sign(idpRSAKey, claims(map[string]any{"aud": "https://other.example"})), 401, invalid, "Access token not issued for this API"},
		{"expired", testidp.Sign(idpRSAKey, claims(map[string]any{"exp": now.Add(-time.Hour).Unix(), "iat": now.Add(-2 * time.Hour).Unix()})), 401, invalid, "Access token expired"},
		{"not yet valid", testidp.Sign(idpRSAKey, claims(map[string]any{"nbf": now.Add(time.Hour).Unix()})), 401, invalid, "Access token not yet valid"},
		{"ID token", testidp.Sign(idpRSAKey, claims(map[string]any{"at_hash": "Zm9v"})), 401, invalid, "Token is not an access token"},
		{"no subject", testidp.Sign(idpRSAKey, claims(map[string]any{"sub": nil})), 401, invalid, "Access token lacks a required claim"},
		{"subject the deny list cannot hold", testidp.Sign(idpRSAKey, claims(map[string]any{"sub": strings.Repeat("s", 600)})), 401, invalid, "Malformed access token"},
		{"subject holding a tab", testidp.Sign(idpRSAKey, claims(map[string]any{"sub": "auth0|user\t1"})), 401, invalid, "Malformed access token"},
		{"no organization", testidp.Sign(idpRSAKey, claims(map[string]any{"org_id": nil})), 401, invalid, "Access token lacks a required claim"},
		{"no tier", testidp.Sign(idpRSAKey, claims(map[string]any{"plan": nil})), 403, scope, "Access token grants no tier"},
		{"unknown tier", testidp.Sign(idpRSAKey, claims(map[string]any{"plan": "gold"})), 403, scope, "Access token names an unknown tier"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for range 2 { // the second answer may come from a cache: the same
				got := get(t, g.base+"/bills", "Authorization", "Bearer "+c.tok)
				expectTokenRefusal(t, got, c.status, `{"error":"`+c.reason+`"}`, tokenChallenge(c.code, c.reason))
			}
		})
	}
	if all := g.upstream.all(); all != "" {
		t.Fatalf("refused requests reached the upstream:\n%s", all)
	}
}

// TestTokenDenied: a denial of the token's subject (or its jti) refuses it
// with 401 "Access token denied" and closes the streams it opened; other
// subjects are untouched; an undenial admits it again.
func TestTokenDenied(t *testing.T) {
	g := startTokenGateway(t, tokenGatewayConfig{})
	awaitListening(t, g.app(t))
	ctx := context.Background()
	tok := g.token(idpRSAKey, "auth0|denied", "enterprise", time.Hour, nil)
	other := g.token(idpRSAKey, "auth0|other", "enterprise", time.Hour, nil)
	g.probe(t, tok, "denied")
	g.probe(t, other, "other")
	w, wo := probeWatch(t, "denied"), probeWatch(t, "other")
	expectOpen(t, w)

	if _, err := keystore.DenyToken(ctx, g.pool, keystore.Denial{Kind: keystore.DenySub, Issuer: g.idp.Issuer(), Value: "auth0|denied", Reason: "test"}, "test"); err != nil {
		t.Fatal(err)
	}
	awaitWatch(t, w, "Access token denied")
	expectTokenRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+tok), 401, `{"error":"Access token denied"}`,
		tokenChallenge("invalid_token", "Access token denied"))
	if got := get(t, g.base+"/bills", "Authorization", "Bearer "+other); got.status != 200 {
		t.Fatalf("another subject: %d %q", got.status, got.body)
	}
	expectOpen(t, wo)

	// a jti, of any issuer
	byJTI := g.token(idpEdKey, "auth0|other", "enterprise", time.Hour, map[string]any{"jti": "deny-this-one"})
	if got := get(t, g.base+"/bills", "Authorization", "Bearer "+byJTI); got.status != 200 {
		t.Fatalf("%d %q", got.status, got.body)
	}
	if _, err := keystore.DenyToken(ctx, g.pool, keystore.Denial{Kind: keystore.DenyJTI, Value: "deny-this-one", Reason: "leaked"}, "test"); err != nil {
		t.Fatal(err)
	}
	awaitBody(t, g.base+"/bills", byJTI, `{"error":"Access token denied"}`, notifyWithin)
	if got := get(t, g.base+"/bills", "Authorization", "Bearer "+other); got.status != 200 {
		t.Fatalf("the subject's other token: %d %q", got.status, got.body)
	}

	if _, err := keystore.UndenyToken(ctx, g.pool, keystore.DenySub, g.idp.Issuer(), "auth0|denied", "test"); err != nil {
		t.Fatal(err)
	}
	awaitBody(t, g.base+"/bills", tok, "upstream ok", notifyWithin)
}

// TestTokenOrgSuspended: suspending the organization a token's org claim
// names (`civicgate keys org suspend`) refuses its tokens with 403 and closes
// their streams; an organization the store does not know is active.
func TestTokenOrgSuspended(t *testing.T) {
	g := startTokenGateway(t, tokenGatewayConfig{})
	awaitListening(t, g.app(t))
	ctx := context.Background()
	tok := g.token(idpRSAKey, "auth0|member", "enterprise", time.Hour, nil)
	g.probe(t, tok, "member")
	w := probeWatch(t, "member")
	stranger := testidp.Sign(idpRSAKey, g.idp.claims("auth0|stranger", "free", "org_not_in_the_store", time.Hour))
	if got := get(t, g.base+"/bills", "Authorization", "Bearer "+stranger); got.status != 200 {
		t.Fatalf("an organization the store does not know: %d %q", got.status, got.body)
	}
	// The claim may name the organization by its name: the token is then the
	// store's organization (its id in {civic.org} and the caller), suspended with it.
	byName := testidp.Sign(idpRSAKey, g.idp.claims("auth0|by-name", "enterprise", "acme", time.Hour))
	if p := g.probe(t, byName, ""); p.Caller.Org != g.acme.OrgID || p.Placeholders["civic.org"] != g.acme.OrgID {
		t.Fatalf("org claim %q: caller org %q, {civic.org} %q, want the store's id %q", "acme", p.Caller.Org, p.Placeholders["civic.org"], g.acme.OrgID)
	}

	if err := keystore.SetOrgStatus(ctx, g.pool, "acme", keystore.OrgSuspended); err != nil {
		t.Fatal(err)
	}
	awaitWatch(t, w, contract.MsgOrgSuspended)
	expectTokenRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+tok), 403, `{"error":"Organization suspended"}`, "")
	expectTokenRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+byName), 403, `{"error":"Organization suspended"}`, "")
	if got := get(t, g.base+"/bills", "Authorization", "Bearer "+stranger); got.status != 200 {
		t.Fatalf("another organization: %d %q", got.status, got.body)
	}
	if err := keystore.SetOrgStatus(ctx, g.pool, "acme", keystore.OrgActive); err != nil {
		t.Fatal(err)
	}
	awaitBody(t, g.base+"/bills", tok, "upstream ok", notifyWithin)
}

// TestTokenWatchExpires: a stream opened with a token closes at its exp with
// "token expired" (not before), and the token is then refused.
func TestTokenWatchExpires(t *testing.T) {
	g := startTokenGateway(t, tokenGatewayConfig{jwtOptions: "leeway 1s"})
	c := g.idp.claims("auth0|short", "enterprise", g.acme.OrgID, 3*time.Second)
	exp := time.Unix(c["exp"].(int64), 0)
	tok := testidp.Sign(idpEdKey, c)
	g.probe(t, tok, "short")
	w := probeWatch(t, "short")
	awaitWatch(t, w, "token expired")
	if now := time.Now(); now.Before(exp) {
		t.Fatalf("fired %s before exp", exp.Sub(now))
	}
	awaitBody(t, g.base+"/bills", tok, `{"error":"Access token expired"}`, notifyWithin)
}

// TestTokenDenialSetAside: a deny-list row its table's rules refuse (written
// with the checks dropped) denies nothing, is counted in
// civicgate_auth_token_denials_set_aside and named in a log line by its
// quoted key; the good rows beside it still deny.
func TestTokenDenialSetAside(t *testing.T) {
	g := startTokenGateway(t, tokenGatewayConfig{})
	awaitListening(t, g.app(t))
	ctx := context.Background()
	if _, err := g.pool.Exec(ctx, `ALTER TABLE civicgate.token_denials DROP CONSTRAINT token_denials_value_check`); err != nil {
		t.Fatal(err)
	}
	if _, err := g.pool.Exec(ctx, `INSERT INTO civicgate.token_denials (kind, value, actor) VALUES ('sub', E'forged\x1b[2J\nline', 'hand')`); err != nil {
		t.Fatal(err)
	}
	tok := g.token(idpRSAKey, "auth0|denied", "enterprise", time.Hour, nil)
	if _, err := keystore.DenyToken(ctx, g.pool, keystore.Denial{Kind: keystore.DenySub, Value: "auth0|denied", Reason: "test"}, "test"); err != nil {
		t.Fatal(err) // its notification reloads the list, the bad row with it
	}
	awaitBody(t, g.base+"/bills", tok, `{"error":"Access token denied"}`, notifyWithin)
	testenv.Eventually(t, notifyWithin, "the set-aside row counted", func() error {
		var m dto.Metric
		if err := g.app(t).metrics.deniesSetAside.Write(&m); err != nil || m.GetGauge().GetValue() != 1 {
			return fmt.Errorf("token_denials_set_aside %v (%v)", m.GetGauge().GetValue(), err)
		}
		return nil
	})
	logs, err := os.ReadFile(g.logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logs), "token denial set aside") || !strings.Contains(string(logs), `forged\\x1b[2J\\nline`) {
		t.Errorf("no log line names the set-aside row by its quoted value:\n%s", logs)
	}
	if strings.Contains(string(logs), "forged\x1b") {
		t.Error("the row's raw control characters reached the log")
	}
}
