package testhydra

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// CreateClient registers a confidential client for the client-credentials
// grant (client_secret_basic or client_secret_post; Hydra wants a secret of
// at least 6 characters) that may ask for the given audiences and scopes.
func (s *Server) CreateClient(t testing.TB, id, secret string, audience, scopes []string) {
	t.Helper()
	body := map[string]any{
		"client_id":                  id,
		"client_secret":              secret,
		"grant_types":                []string{"client_credentials"},
		"response_types":             []string{"token"},
		"token_endpoint_auth_method": "client_secret_basic",
		"access_token_strategy":      "jwt",
		"audience":                   nonNil(audience),
		"scope":                      strings.Join(scopes, " "),
	}
	if err := s.expect(http.MethodPost, s.AdminURL()+"/admin/clients", body, http.StatusCreated, nil); err != nil {
		t.Fatalf("testhydra: create client %s: %v", id, err)
	}
}

// SetClaims makes the token hook put claims into every access token issued
// to clientID from now on (nil removes them). A claim must be one of
// Options.TopLevelClaims, unless Options.Ext is on: then the others are
// carried under "ext" only. Claims Hydra sets itself (iss, sub, aud, …)
// cannot be set.
func (s *Server) SetClaims(t testing.TB, clientID string, claims map[string]any) {
	t.Helper()
	for name := range claims {
		switch {
		case slices.Contains(reservedClaims, name):
			t.Fatalf("testhydra: SetClaims: %q is set by Hydra itself", name)
		case !s.opts.Ext && !slices.Contains(s.opts.TopLevelClaims, name):
			t.Fatalf("testhydra: SetClaims: %q is not in Options.TopLevelClaims %v and Options.Ext is off: Hydra would drop it", name, s.opts.TopLevelClaims)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if claims == nil {
		delete(s.claims, clientID)
		return
	}
	s.claims[clientID] = maps.Clone(claims)
}

// Token asks the token endpoint for a client-credentials access token and
// returns it (a JWT). It fails the test if Hydra refuses.
func (s *Server) Token(t testing.TB, clientID, secret string, audience, scopes []string) string {
	t.Helper()
	tok, err := s.RequestToken(clientID, secret, audience, scopes)
	if err != nil {
		t.Fatalf("testhydra: %v", err)
	}
	return tok
}

// RequestToken is Token for a test that expects a refusal or an outage: the
// error carries Hydra's status and OAuth error code, never a token.
func (s *Server) RequestToken(clientID, secret string, audience, scopes []string) (string, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(audience) > 0 {
		form.Set("audience", strings.Join(audience, " "))
	}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	c, cancel := requestContext()
	defer cancel()
	req, err := http.NewRequestWithContext(c, http.MethodPost, s.TokenURL(), strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("token request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	// RFC 6749 §2.3.1: id and secret are form-encoded inside Basic auth.
	req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	res, err := s.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("token request: %w", err)
	}
	defer res.Body.Close()
	var body struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&body); err != nil {
		return "", fmt.Errorf("token response (status %d): %w", res.StatusCode, err)
	}
	if res.StatusCode != http.StatusOK || body.AccessToken == "" {
		return "", fmt.Errorf("token endpoint: status %d, error %q: %s", res.StatusCode, body.Error, body.Description)
	}
	if !strings.EqualFold(body.TokenType, "bearer") {
		return "", fmt.Errorf("token endpoint: token_type %q, want bearer", body.TokenType)
	}
	return body.AccessToken, nil
}

// RotateKeys adds a new RS256 key to the access token key set and returns
// its kid. Hydra signs with the set's newest key, so tokens issued from now
// on carry this kid, while the older keys stay in the JWKS and tokens signed
// with them still verify. The new kid is published in the JWKS before
// RotateKeys returns.
func (s *Server) RotateKeys(t testing.TB) string {
	t.Helper()
	kid := "civicgate-test-" + randomHex(t, 8)
	var created, published keySet
	body := map[string]any{"alg": "RS256", "use": "sig", "kid": kid}
	if err := s.expect(http.MethodPost, s.AdminURL()+"/admin/keys/"+AccessTokenKeySet, body, http.StatusCreated, &created); err != nil {
		t.Fatalf("testhydra: rotate keys: %v", err)
	}
	if k := created.kids(); len(k) != 1 || k[0] != kid {
		t.Fatalf("testhydra: rotate keys: Hydra created keys %v, want the one key %s", k, kid)
	}
	if err := s.expect(http.MethodGet, s.JWKSURL(), nil, http.StatusOK, &published); err != nil {
		t.Fatalf("testhydra: rotate keys: JWKS: %v", err)
	}
	if !slices.Contains(published.kids(), kid) {
		t.Fatalf("testhydra: rotate keys: the JWKS does not list the new key %s", kid)
	}
	return kid
}

// keySet is a JWK set as far as the helpers read it (the admin API answers
// with private keys too: nothing of it but the kids is kept or shown).
type keySet struct {
	Keys []struct {
		Kid string `json:"kid"`
	} `json:"keys"`
}

func (k keySet) kids() []string {
	out := make([]string, 0, len(k.Keys))
	for _, key := range k.Keys {
		out = append(out, key.Kid)
	}
	return out
}

// hookPath and hookKeyHeader are where Hydra sends the token hook and the
// header carrying the key that proves the call is Hydra's.
const (
	hookPath      = "/token-hook"
	hookKeyHeader = "X-Civicgate-Hook-Key"
)

// serveTokenHook answers Hydra's token hook (Hydra's oauth2.TokenHook): 200
// with the client's claims as the access token's extra claims, or 204 (no
// change) for a client without claims.
func (s *Server) serveTokenHook(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != hookPath || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get(hookKeyHeader) != s.hookKey {
		http.Error(w, "wrong hook key", http.StatusForbidden)
		return
	}
	var req struct {
		Request struct {
			ClientID string `json:"client_id"`
		} `json:"request"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, "undecodable hook request", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	claims := s.claims[req.Request.ClientID]
	s.mu.Unlock()
	if claims == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"session": map[string]any{"access_token": claims},
	})
}

// expect sends a JSON request (body nil: none) and wants status want; out,
// if not nil, receives the decoded response.
func (s *Server) expect(method, url string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	c, cancel := requestContext()
	defer cancel()
	req, err := http.NewRequestWithContext(c, method, url, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read response: %w", method, url, err)
	}
	if res.StatusCode != want {
		// Admin API errors are Hydra's JSON error objects, no secrets.
		return fmt.Errorf("%s %s: status %d, want %d: %s", method, url, res.StatusCode, want, tail(b, 1024))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decode response: %w", method, url, err)
		}
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// requestContext bounds one request to Hydra.
func requestContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}
