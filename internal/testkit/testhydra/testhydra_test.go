package testhydra_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/civicgate/civicgate/internal/testkit/testhydra"
)

const (
	audience = "https://records.civicgate.test"
	scope    = "records:read"
)

// header and claims are the parts of a Hydra access token the tests read.
type header struct {
	Alg string `json:"alg"`
	Typ string `json:"typ"`
	Kid string `json:"kid"`
}

type claims struct {
	Iss      string         `json:"iss"`
	Sub      string         `json:"sub"`
	Aud      []string       `json:"aud"`
	Exp      int64          `json:"exp"`
	Iat      int64          `json:"iat"`
	ClientID string         `json:"client_id"`
	Scp      []string       `json:"scp"`
	Scope    string         `json:"scope"`
	Plan     string         `json:"plan"`
	OrgID    string         `json:"org_id"`
	Tier     string         `json:"tier"`
	Ext      map[string]any `json:"ext"`
}

// decode splits a JWT into its header and claims, without verifying it.
func decode(t *testing.T, token string) (header, claims) {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("access token has %d parts, want a JWS of 3", len(parts))
	}
	var h header
	var c claims
	for i, out := range []any{&h, &c} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatalf("access token part %d: %v", i, err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("access token part %d: %v", i, err)
		}
	}
	return h, c
}

func jwksKids(t *testing.T, url string) ([]string, error) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("JWKS: status %d", res.StatusCode)
	}
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
			Use string `json:"use"`
			D   string `json:"d"`
		} `json:"keys"`
	}
	if err := json.NewDecoder(res.Body).Decode(&set); err != nil {
		t.Fatalf("JWKS: %v", err)
	}
	var kids []string
	for _, k := range set.Keys {
		if k.D != "" {
			t.Fatalf("JWKS publishes the private part of key %s", k.Kid)
		}
		kids = append(kids, k.Kid)
	}
	return kids, nil
}

// verify checks the token's signature against the server's JWKS, as a
// resource server would.
func verify(t *testing.T, ctx context.Context, h *testhydra.Server, token string) {
	t.Helper()
	keys := oidc.NewRemoteKeySet(ctx, h.JWKSURL())
	if _, err := keys.VerifySignature(ctx, token); err != nil {
		t.Fatalf("token does not verify against %s: %v", h.JWKSURL(), err)
	}
}

func TestClientCredentialsToken(t *testing.T) {
	h := testhydra.Start(t, testhydra.Options{AccessTokenLifespan: 5 * time.Minute})
	// After Start: on a fresh machine Start builds Hydra first, which took
	// more than five minutes of a deadline taken before it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Discovery names the issuer and endpoints the helper does.
	var disc struct {
		Issuer        string `json:"issuer"`
		JWKSURI       string `json:"jwks_uri"`
		TokenEndpoint string `json:"token_endpoint"`
	}
	res, err := http.Get(h.DiscoveryURL())
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	err = json.NewDecoder(res.Body).Decode(&disc)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("discovery: status %d, %v", res.StatusCode, err)
	}
	if disc.Issuer != h.Issuer() || disc.JWKSURI != h.JWKSURL() || disc.TokenEndpoint != h.TokenURL() {
		t.Fatalf("discovery %+v, want issuer %s, jwks_uri %s, token_endpoint %s", disc, h.Issuer(), h.JWKSURL(), h.TokenURL())
	}
	if !strings.HasPrefix(h.Issuer(), "http://127.0.0.1:") || !strings.HasSuffix(h.Issuer(), "/") {
		t.Fatalf("issuer %s, want http://127.0.0.1:PORT/", h.Issuer())
	}

	h.CreateClient(t, "svc-reports", "reports-secret", []string{audience}, []string{scope, "records:write"})
	h.SetClaims(t, "svc-reports", map[string]any{"plan": "gold", "org_id": "org-42"})
	h.CreateClient(t, "svc-plain", "plain-secret", []string{audience}, []string{scope})

	tok := h.Token(t, "svc-reports", "reports-secret", []string{audience}, []string{scope})
	hd, cl := decode(t, tok)
	if hd.Alg != "RS256" || hd.Typ != "JWT" || hd.Kid == "" {
		t.Fatalf("header %+v, want alg RS256, typ JWT and a kid", hd)
	}
	if cl.Iss != h.Issuer() || cl.Sub != "svc-reports" || cl.ClientID != "svc-reports" {
		t.Fatalf("iss %q sub %q client_id %q, want %s and svc-reports", cl.Iss, cl.Sub, cl.ClientID, h.Issuer())
	}
	if !slices.Equal(cl.Aud, []string{audience}) || !slices.Equal(cl.Scp, []string{scope}) {
		t.Fatalf("aud %v scp %v, want [%s] and [%s] (only what was asked for)", cl.Aud, cl.Scp, audience, scope)
	}
	if cl.Plan != "gold" || cl.OrgID != "org-42" {
		t.Fatalf("plan %q org_id %q, want the hook's gold and org-42", cl.Plan, cl.OrgID)
	}
	if cl.Ext != nil {
		t.Fatalf("ext %v, want none (Options.Ext is off)", cl.Ext)
	}
	// Hydra takes exp from the request's start and iat from the signing, a
	// moment later; at most 300 s tells the lifespan from Hydra's 1 h.
	if d := cl.Exp - cl.Iat; d <= 0 || d > 300 {
		t.Fatalf("exp-iat %d s, want the 300 s lifespan", d)
	}
	verify(t, ctx, h, tok)
	kids, err := jwksKids(t, h.JWKSURL())
	if err != nil || !slices.Contains(kids, hd.Kid) {
		t.Fatalf("JWKS kids %v (%v), want the token's %s among them", kids, err, hd.Kid)
	}

	// A client without claims gets none; a wrong secret or an audience the
	// client may not ask for is refused.
	_, plain := decode(t, h.Token(t, "svc-plain", "plain-secret", []string{audience}, nil))
	if plain.Plan != "" || plain.OrgID != "" || plain.Sub != "svc-plain" {
		t.Fatalf("svc-plain's token: sub %q plan %q org_id %q, want no custom claim", plain.Sub, plain.Plan, plain.OrgID)
	}
	if _, err := h.RequestToken("svc-reports", "wrong-secret", []string{audience}, nil); err == nil || !strings.Contains(err.Error(), "invalid_client") {
		t.Fatalf("wrong secret: %v, want invalid_client", err)
	}
	if _, err := h.RequestToken("svc-reports", "reports-secret", []string{"https://elsewhere.test"}, nil); err == nil || !strings.Contains(err.Error(), "invalid_request") {
		t.Fatalf("foreign audience: %v, want invalid_request", err)
	}

	// Rotation: the new key is published beside the old one, new tokens
	// carry it, and the old token still verifies.
	newKid := h.RotateKeys(t)
	if newKid == hd.Kid {
		t.Fatalf("RotateKeys returned the old kid %s", newKid)
	}
	kids, err = jwksKids(t, h.JWKSURL())
	if err != nil || !slices.Contains(kids, newKid) || !slices.Contains(kids, hd.Kid) {
		t.Fatalf("JWKS kids after rotation %v (%v), want both %s and %s", kids, err, hd.Kid, newKid)
	}
	rotated := h.Token(t, "svc-reports", "reports-secret", []string{audience}, []string{scope})
	if rh, rc := decode(t, rotated); rh.Kid != newKid || rc.Plan != "gold" {
		t.Fatalf("token after rotation: kid %s plan %q, want %s and gold", rh.Kid, rc.Plan, newKid)
	}
	verify(t, ctx, h, rotated)
	verify(t, ctx, h, tok)

	// Outage: the JWKS and the token endpoint refuse connections.
	h.Stop(t)
	if _, err := jwksKids(t, h.JWKSURL()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("JWKS while stopped: %v, want connection refused", err)
	}
	if _, err := h.RequestToken("svc-reports", "reports-secret", []string{audience}, nil); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("token while stopped: %v, want connection refused", err)
	}

	// Back: the same issuer, clients and keys.
	h.Restart(t)
	kids, err = jwksKids(t, h.JWKSURL())
	if err != nil || !slices.Contains(kids, newKid) || !slices.Contains(kids, hd.Kid) {
		t.Fatalf("JWKS kids after restart %v (%v), want %s and %s still", kids, err, hd.Kid, newKid)
	}
	after := h.Token(t, "svc-reports", "reports-secret", []string{audience}, []string{scope})
	if ah, ac := decode(t, after); ah.Kid != newKid || ac.Iss != h.Issuer() || ac.OrgID != "org-42" {
		t.Fatalf("token after restart: kid %s iss %s org_id %q, want %s, %s, org-42", ah.Kid, ac.Iss, ac.OrgID, newKid, h.Issuer())
	}
	verify(t, ctx, h, after)
}

// TestExtAndScopeString covers the options: with Ext every custom claim is
// mirrored under "ext" and one outside TopLevelClaims is only there; with
// ScopeClaim "string" the scopes are a space-separated "scope" claim.
func TestExtAndScopeString(t *testing.T) {
	h := testhydra.Start(t, testhydra.Options{Ext: true, ScopeClaim: "string", TopLevelClaims: []string{"plan"}})
	h.CreateClient(t, "svc-ext", "ext-secret", []string{audience}, []string{scope, "records:write"})
	h.SetClaims(t, "svc-ext", map[string]any{"plan": "silver", "tier": "t2"})
	_, cl := decode(t, h.Token(t, "svc-ext", "ext-secret", []string{audience}, []string{scope, "records:write"}))
	if cl.Plan != "silver" || cl.Tier != "" {
		t.Fatalf("top level plan %q tier %q, want silver and no tier", cl.Plan, cl.Tier)
	}
	if cl.Ext["plan"] != "silver" || cl.Ext["tier"] != "t2" {
		t.Fatalf("ext %v, want plan silver and tier t2", cl.Ext)
	}
	if cl.Scope != scope+" records:write" || cl.Scp != nil {
		t.Fatalf("scope %q scp %v, want %q and no scp", cl.Scope, cl.Scp, scope+" records:write")
	}
}
