package testoidc_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/civicgate/civicgate/internal/testkit/testoidc"
)

// relyingParty is the test's client side: a callback server that records the
// code it is sent, and the oauth2/oidc configuration pointing at p.
type relyingParty struct {
	p        *testoidc.Provider
	callback *httptest.Server
	codes    chan url.Values
	provider *oidc.Provider
	config   oauth2.Config
	client   *http.Client // the "browser": follows redirects, keeps cookies
}

func newRelyingParty(t *testing.T, ctx context.Context, start func(t testing.TB, redirect string) *testoidc.Provider) *relyingParty {
	t.Helper()
	rp := &relyingParty{codes: make(chan url.Values, 1)}
	rp.callback = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		rp.codes <- r.URL.Query()
		_, _ = io.WriteString(w, "signed in")
	}))
	t.Cleanup(rp.callback.Close)
	redirect := rp.callback.URL + "/callback"
	rp.p = start(t, redirect)

	var err error
	rp.provider, err = oidc.NewProvider(ctx, rp.p.Issuer)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	rp.config = oauth2.Config{
		ClientID:     rp.p.ClientID,
		ClientSecret: rp.p.ClientSecret,
		Endpoint:     rp.provider.Endpoint(),
		RedirectURL:  redirect,
		Scopes:       []string{oidc.ScopeOpenID, "email", "profile"},
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	rp.client = &http.Client{Jar: jar, Timeout: 10 * time.Second}
	return rp
}

var hiddenID = regexp.MustCompile(`name="id" value="([^"]+)"`)

// signIn goes to the authorization endpoint with a PKCE challenge for
// verifier, posts username/password to the login form it lands on, follows
// the redirects to the callback and returns the code the callback got.
func (rp *relyingParty) signIn(t *testing.T, ctx context.Context, verifier, username, password string) string {
	t.Helper()
	state, nonce := oauth2.GenerateVerifier(), oauth2.GenerateVerifier()
	authURL := rp.config.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce))
	if !strings.HasPrefix(authURL, rp.p.AuthorizationEndpoint()+"?") {
		t.Fatalf("auth URL %s does not start with %s", authURL, rp.p.AuthorizationEndpoint())
	}
	res, err := rp.client.Get(authURL)
	if err != nil {
		t.Fatalf("authorize: %v", err)
	}
	page := readAll(t, res)
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != testoidc.LoginPath {
		t.Fatalf("authorize landed on %s with %d, want the login page:\n%s", res.Request.URL, res.StatusCode, page)
	}
	for _, want := range []string{`id="username"`, `id="password"`, `action="/login/username"`, `type="submit"`} {
		if !strings.Contains(page, want) {
			t.Fatalf("login page lacks %s (the selectors in testoidc would not match):\n%s", want, page)
		}
	}
	m := hiddenID.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("login page has no auth request id:\n%s", page)
	}
	res, err = rp.client.PostForm(rp.p.Issuer+testoidc.LoginPath, url.Values{
		"id": {m[1]}, "username": {username}, "password": {password},
	})
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	body := readAll(t, res)
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/callback" {
		t.Fatalf("login ended at %s with %d, want the callback:\n%s", res.Request.URL, res.StatusCode, body)
	}
	select {
	case q := <-rp.codes:
		if q.Get("state") != state {
			t.Fatalf("callback state %q, want %q", q.Get("state"), state)
		}
		if q.Get("code") == "" {
			t.Fatalf("callback without code: %v", q)
		}
		return q.Get("code")
	case <-ctx.Done():
		t.Fatalf("callback not called: %v", ctx.Err())
		return ""
	}
}

func readAll(t *testing.T, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAuthorizationCodeFlowWithPKCE(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rp := newRelyingParty(t, ctx, func(t testing.TB, redirect string) *testoidc.Provider {
		return testoidc.Start(t, redirect)
	})
	p := rp.p
	if !strings.HasPrefix(p.Issuer, "http://127.0.0.1:") {
		t.Errorf("issuer %s", p.Issuer)
	}
	if p.Email != "test-user@zitadel.ch" || !p.EmailVerified || p.Username != "test-user@127.0.0.1" || p.Password == "" || p.Subject != "id1" {
		t.Errorf("first user: %+v", p)
	}

	verifier := oauth2.GenerateVerifier()
	code := rp.signIn(t, ctx, verifier, p.Username, p.Password)
	tok, err := rp.config.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok {
		t.Fatalf("token response without id_token")
	}
	idToken, err := rp.provider.Verifier(&oidc.Config{ClientID: p.ClientID}).Verify(ctx, raw)
	if err != nil {
		t.Fatalf("verify ID token: %v", err)
	}
	var claims map[string]any
	if err := idToken.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	t.Logf("ID token claims: %v", claims)
	want := map[string]any{
		"iss": p.Issuer, "sub": p.Subject, "email": p.Email, "email_verified": true,
		"preferred_username": p.Username, "name": "Test User", "given_name": "Test", "family_name": "User", "locale": "de",
	}
	for k, v := range want {
		if claims[k] != v {
			t.Errorf("ID token %s = %v, want %v", k, claims[k], v)
		}
	}
	if _, ok := claims[testoidc.GroupsClaim]; ok {
		t.Errorf("first user has a groups claim: %v", claims[testoidc.GroupsClaim])
	}

	info, err := rp.provider.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		t.Fatalf("userinfo: %v", err)
	}
	if info.Email != p.Email || !info.EmailVerified || info.Subject != p.Subject {
		t.Errorf("userinfo: %+v", info)
	}

	// The code is spent: a second exchange fails.
	if _, err := rp.config.Exchange(ctx, code, oauth2.VerifierOption(verifier)); err == nil {
		t.Errorf("second exchange of the same code succeeded")
	}
}

func TestPKCEIsEnforced(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rp := newRelyingParty(t, ctx, func(t testing.TB, redirect string) *testoidc.Provider {
		return testoidc.Start(t, redirect)
	})
	verifier := oauth2.GenerateVerifier()

	code := rp.signIn(t, ctx, verifier, rp.p.Username, rp.p.Password)
	_, err := rp.config.Exchange(ctx, code, oauth2.VerifierOption(oauth2.GenerateVerifier()))
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
		t.Fatalf("exchange with a wrong verifier: %v, want invalid_grant", err)
	}

	code = rp.signIn(t, ctx, verifier, rp.p.Username, rp.p.Password)
	if _, err := rp.config.Exchange(ctx, code); err == nil {
		t.Fatalf("exchange without the verifier succeeded")
	}
	if _, err := rp.config.Exchange(ctx, code, oauth2.VerifierOption(verifier)); err != nil {
		t.Fatalf("exchange with the right verifier after the failed ones: %v", err)
	}
}

func TestAddUserWithGroups(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rp := newRelyingParty(t, ctx, func(t testing.TB, redirect string) *testoidc.Provider {
		return testoidc.Start(t, redirect)
	})
	sub := rp.p.AddUser(t, testoidc.User{
		Username: "clerk", Password: "pw-clerk", Email: "clerk@springfield.example.gov", EmailVerified: true,
		FirstName: "Ann", LastName: "Clerk", Groups: []string{"springfield-admins", "staff"},
	})

	verifier := oauth2.GenerateVerifier()
	code := rp.signIn(t, ctx, verifier, "clerk", "pw-clerk")
	tok, err := rp.config.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	idToken, err := rp.provider.Verifier(&oidc.Config{ClientID: rp.p.ClientID}).Verify(ctx, tok.Extra("id_token").(string))
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Sub           string   `json:"sub"`
		Email         string   `json:"email"`
		EmailVerified bool     `json:"email_verified"`
		Groups        []string `json:"groups"`
	}
	if err := idToken.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	if claims.Sub != sub || claims.Email != "clerk@springfield.example.gov" || !claims.EmailVerified ||
		!slices.Equal(claims.Groups, []string{"springfield-admins", "staff"}) {
		t.Errorf("ID token claims: %+v", claims)
	}
	info, err := rp.provider.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		t.Fatal(err)
	}
	var infoClaims struct {
		Groups []string `json:"groups"`
	}
	if err := info.Claims(&infoClaims); err != nil {
		t.Fatal(err)
	}
	if info.Email != "clerk@springfield.example.gov" || !slices.Equal(infoClaims.Groups, claims.Groups) {
		t.Errorf("userinfo: %+v groups %v", info, infoClaims.Groups)
	}
}

func TestWrongPasswordStaysOnLoginPage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rp := newRelyingParty(t, ctx, func(t testing.TB, redirect string) *testoidc.Provider {
		return testoidc.Start(t, redirect)
	})
	authURL := rp.config.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
	res, err := rp.client.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	m := hiddenID.FindStringSubmatch(readAll(t, res))
	if m == nil {
		t.Fatal("no login form")
	}
	res, err = rp.client.PostForm(rp.p.Issuer+testoidc.LoginPath, url.Values{"id": {m[1]}, "username": {rp.p.Username}, "password": {"wrong"}})
	if err != nil {
		t.Fatal(err)
	}
	page := readAll(t, res)
	if res.Request.URL.Path != testoidc.LoginPath || !strings.Contains(page, "username or password wrong") {
		t.Fatalf("wrong password: at %s:\n%s", res.Request.URL, page)
	}
	select {
	case q := <-rp.codes:
		t.Fatalf("callback called after a wrong password: %v", q)
	default:
	}
}

func TestProvidersAreIndependent(t *testing.T) {
	a := testoidc.Start(t, "http://127.0.0.1:1/a")
	b := testoidc.Start(t, "http://127.0.0.1:1/b")
	if a.Issuer == b.Issuer || a.ClientID == b.ClientID || a.ClientSecret == b.ClientSecret {
		t.Fatalf("two providers share an issuer, a client id or a secret: %s %s", a.Issuer, b.Issuer)
	}
	a.AddUser(t, testoidc.User{Username: "only-in-a", Password: "x"})
	// b does not know a's client: its authorization endpoint refuses it.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noRedirect.Get(b.AuthorizationEndpoint() + "?" + url.Values{
		"client_id": {a.ClientID}, "response_type": {"code"}, "scope": {"openid"}, "redirect_uri": {"http://127.0.0.1:1/a"},
	}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, res)
	if res.StatusCode < 400 || strings.Contains(body, `id="username"`) {
		t.Fatalf("provider b answered %d for provider a's client, want an error:\n%s", res.StatusCode, body)
	}
}
