package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/civicgate/civicgate/modules/console/consolestore"
)

// oidcClient signs members in with an OpenID Connect provider: the
// authorization code flow with PKCE (S256) and a nonce, state bound to the
// browser by a cookie and kept server-side for single use.
type oidcClient struct {
	cfg OIDCConfig

	mu       sync.Mutex
	provider *oidc.Provider // discovered at the first sign-in
}

func newOIDCClient(cfg OIDCConfig, repl *caddy.Replacer) (*oidcClient, error) {
	cfg.Issuer = repl.ReplaceAll(cfg.Issuer, "")
	cfg.ClientID = repl.ReplaceAll(cfg.ClientID, "")
	cfg.ClientSecret = repl.ReplaceAll(cfg.ClientSecret, "")
	cfg.RedirectURL = repl.ReplaceAll(cfg.RedirectURL, "")
	if cfg.Issuer == "" || cfg.ClientID == "" {
		return nil, errors.New("issuer and client_id are required")
	}
	if len(cfg.Rules) == 0 {
		return nil, errors.New("at least one map rule is required: nobody could sign in")
	}
	for _, r := range cfg.Rules {
		if err := r.check(); err != nil {
			return nil, err
		}
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = []string{oidc.ScopeOpenID, "email", "profile"}
	}
	return &oidcClient{cfg: cfg}, nil
}

func (c *oidcClient) discover(ctx context.Context) (*oidc.Provider, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.provider != nil {
		return c.provider, nil
	}
	p, err := oidc.NewProvider(ctx, c.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("console: OIDC discovery: %w", err)
	}
	c.provider = p
	return p, nil
}

func (c *oidcClient) oauth(p *oidc.Provider, r *http.Request) oauth2.Config {
	redirect := c.cfg.RedirectURL
	if redirect == "" {
		redirect = "https://" + r.Host + "/auth/callback"
	}
	return oauth2.Config{ClientID: c.cfg.ClientID, ClientSecret: c.cfg.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: redirect, Scopes: c.cfg.Scopes}
}

func randomString() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("console: random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// oidcStart sends the browser to the provider.
func (h *Handler) oidcStart(w http.ResponseWriter, r *http.Request) {
	if h.oidc == nil {
		h.notFound(w, r)
		return
	}
	p, err := h.oidc.discover(r.Context())
	if err != nil {
		h.logger.Error("console: OIDC provider unreachable", errField(err))
		h.status(w, r, http.StatusBadGateway, "The sign-in provider cannot be reached", "Try again in a minute, or sign in with a link.")
		return
	}
	state, err1 := randomString()
	nonce, err2 := randomString()
	if err := errors.Join(err1, err2); err != nil {
		h.fail(w, r, err)
		return
	}
	verifier := oauth2.GenerateVerifier()
	if err := consolestore.SaveOIDCFlow(r.Context(), h.pool, state, verifier, nonce); err != nil {
		h.fail(w, r, err)
		return
	}
	setCookie(w, oidcStateCookie, state, int(consolestore.OIDCFlowTTL.Seconds()))
	cfg := h.oidc.oauth(p, r)
	http.Redirect(w, r, cfg.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), http.StatusSeeOther)
}

// oidcCallback finishes a sign-in: state checked against the cookie and used
// once, the code exchanged with the PKCE verifier, the ID token verified
// (issuer, audience, expiry, signature, nonce), the claims mapped.
func (h *Handler) oidcCallback(w http.ResponseWriter, r *http.Request) {
	if h.oidc == nil {
		h.notFound(w, r)
		return
	}
	refuse := func(why string) {
		h.status(w, r, http.StatusForbidden, "Sign-in failed", why)
	}
	q := r.URL.Query()
	setCookie(w, oidcStateCookie, "", -1)
	if q.Get("error") != "" {
		refuse("The sign-in provider did not sign you in. Try again.")
		return
	}
	c, err := r.Cookie(oidcStateCookie)
	state := q.Get("state")
	if err != nil || state == "" || subtle.ConstantTimeCompare([]byte(c.Value), []byte(state)) != 1 {
		refuse("This sign-in did not start in this browser, or took too long. Try again.")
		return
	}
	verifier, nonce, err := consolestore.TakeOIDCFlow(r.Context(), h.pool, state)
	if errors.Is(err, consolestore.ErrNotFound) {
		refuse("This sign-in was already used or took too long. Try again.")
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p, err := h.oidc.discover(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	cfg := h.oidc.oauth(p, r)
	tok, err := cfg.Exchange(r.Context(), q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		h.logger.Info("console: OIDC code exchange refused", errField(err))
		refuse("The sign-in provider refused the sign-in. Try again.")
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := p.Verifier(&oidc.Config{ClientID: h.oidc.cfg.ClientID}).Verify(r.Context(), raw)
	if err != nil || subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		h.logger.Info("console: OIDC ID token refused", errField(err))
		refuse("The sign-in provider's answer could not be verified.")
		return
	}
	claims := map[string]any{}
	if err := idt.Claims(&claims); err != nil {
		refuse("The sign-in provider's answer could not be read.")
		return
	}
	if _, ok := claims["email"]; !ok {
		// Providers may keep the profile claims in the userinfo endpoint.
		if ui, err := p.UserInfo(r.Context(), oauth2.StaticTokenSource(tok)); err == nil && ui.Subject == idt.Subject {
			extra := map[string]any{}
			if ui.Claims(&extra) == nil {
				for k, v := range extra {
					if _, have := claims[k]; !have {
						claims[k] = v
					}
				}
			}
		}
	}
	id, ok, err := h.mapClaims(r.Context(), claims)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !ok {
		refuse("Your account is not a member of any organization here. Ask your operator.")
		return
	}
	h.startSession(w, r, id, "oidc")
}

// mapClaims applies the first rule that matches; ok=false when none does.
func (h *Handler) mapClaims(ctx context.Context, claims map[string]any) (consolestore.Identity, bool, error) {
	email, _ := claims["email"].(string)
	email = strings.ToLower(strings.TrimSpace(email))
	verified, _ := claims["email_verified"].(bool)
	if email == "" {
		return consolestore.Identity{}, false, nil
	}
	for _, rule := range h.oidc.cfg.Rules {
		if !rule.matches(claims, email, verified) {
			continue
		}
		id := consolestore.Identity{Email: email, Role: rule.Role}
		if rule.Org != "*" {
			o, err := consolestore.OrgByName(ctx, h.pool, rule.Org)
			if errors.Is(err, consolestore.ErrNotFound) || (err == nil && o.Status == "deleted") {
				continue
			}
			if err != nil {
				return id, false, err
			}
			id.OrgID = o.ID
		}
		return id, true, nil
	}
	return consolestore.Identity{}, false, nil
}

func (r OIDCRule) matches(claims map[string]any, email string, verified bool) bool {
	if r.Claim == "email_domain" {
		at := strings.LastIndexByte(email, '@')
		return verified && at >= 0 && email[at+1:] == r.Value
	}
	switch v := claims[r.Claim].(type) {
	case string:
		return v == r.Value
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok && s == r.Value {
				return true
			}
		}
	}
	return false
}
