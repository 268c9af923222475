// Package testoidc starts a real OpenID Connect provider inside a test: the
// zitadel/oidc library's example OP (github.com/zitadel/oidc/v3/example/server)
// with its in-memory storage, serving discovery, the authorization endpoint
// (/auth), a username/password login page (/login/username), the token,
// userinfo and JWKS endpoints over plain HTTP on 127.0.0.1.
//
// Each Provider has its own storage, its own client map and its own signing
// key, so tests may start as many as they like in parallel; nothing is shared
// between providers (the example's package-level client map, filled by
// storage.RegisterClients, is not used: storage.NewStorageWithClients takes
// this provider's own map).
//
// The provider differs from the bare example in two ways, both to look like
// the identity providers the console meets in production:
//   - the ID token carries the userinfo claims of the requested scopes (email,
//     email_verified, name, preferred_username, …) even in the code flow; the
//     bare example puts them only in the userinfo response;
//   - a user added with AddUser may carry groups, emitted as the "groups"
//     claim (an array of strings) in the ID token and in userinfo.
package testoidc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// CSS selectors of the example OP's login form (exampleop/templates/login.html),
// for a browser test that signs in: fill UsernameField and PasswordField, then
// click SubmitButton. A wrong password renders the same form again with the
// message in ErrorText.
const (
	LoginForm     = `form[action="/login/username"]`
	UsernameField = `input#username`
	PasswordField = `input#password`
	SubmitButton  = `form[action="/login/username"] button[type="submit"]`
	ErrorText     = `form[action="/login/username"] p`
)

// LoginPath is the path of the login page the OP redirects the browser to
// from its authorization endpoint (with ?authRequestID=…).
const LoginPath = "/login/username"

// GroupsClaim is the name of the claim carrying a user's groups.
const GroupsClaim = "groups"

// Provider is a running OpenID Connect provider with one registered
// confidential web client and the example's first test user.
type Provider struct {
	// Issuer is http://127.0.0.1:PORT, the URL to give oidc.NewProvider
	// (discovery is at Issuer + "/.well-known/openid-configuration").
	Issuer string
	// ClientID and ClientSecret are the registered web client's (client
	// authentication: client_secret_basic, which golang.org/x/oauth2 picks
	// by itself; client_secret_post is accepted too). Its redirect URIs are
	// the ones given to Start; its grants are authorization_code,
	// refresh_token and token exchange.
	ClientID     string
	ClientSecret string

	// The example's first user, as storage.NewUserStore defines it. Signing
	// in as this user with the scopes "openid email profile" gives these
	// claims, in the ID token and from userinfo:
	//   sub                Subject ("id1")
	//   email              Email ("test-user@zitadel.ch")
	//   email_verified     true
	//   preferred_username Username ("test-user@127.0.0.1")
	//   name               "Test User", given_name "Test", family_name "User"
	//   locale             "de"
	// and no group or role claim (use AddUser with Groups for one).
	Subject       string
	Username      string
	Password      string
	Email         string
	EmailVerified bool

	users *userStore
}

// Start starts a provider on a free loopback port, registers a confidential
// web client that may redirect to redirectURIs, and stops it when the test
// ends. The client id is unique to this provider; the secret is random.
func Start(t testing.TB, redirectURIs ...string) *Provider {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testoidc: listen: %v", err)
	}
	issuer := "http://" + ln.Addr().String()

	clientID := "civicgate-test-" + randomHex(t, 8)
	secret := randomHex(t, 24)
	clients := map[string]*storage.Client{
		clientID: storage.WebClient(clientID, secret, redirectURIs...),
	}
	users := &userStore{UserStore: storage.NewUserStore(issuer), extra: map[string]*user{}}
	st := &providerStorage{Storage: storage.NewStorageWithClients(users, clients), users: users}

	// A nil logger leaves slog's default logger alone; the example's request
	// logging then goes to the process's default logger.
	handler := exampleop.SetupServer(issuer, st, nil, false)
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("testoidc: serve: %v", err)
		}
	})

	first := users.GetUserByID("id1")
	if first == nil {
		t.Fatalf("testoidc: the example user store has no user id1")
	}
	return &Provider{
		Issuer:        issuer,
		ClientID:      clientID,
		ClientSecret:  secret,
		Subject:       first.ID,
		Username:      first.Username,
		Password:      first.Password,
		Email:         first.Email,
		EmailVerified: first.EmailVerified,
		users:         users,
	}
}

// User is a user to add to a running provider.
type User struct {
	// Username and Password sign in on the login page; Username must not be
	// taken (the example's are "test-user@127.0.0.1" and "test-user2").
	Username string
	Password string
	// Email and EmailVerified become the email and email_verified claims.
	Email         string
	EmailVerified bool
	// FirstName and LastName become given_name, family_name and name.
	FirstName string
	LastName  string
	// Groups, when not empty, become the "groups" claim.
	Groups []string
}

// AddUser adds a user who can sign in from now on and returns its subject
// (the sub claim). It fails the test if the username is taken.
func (p *Provider) AddUser(t testing.TB, u User) string {
	t.Helper()
	if u.Username == "" || u.Password == "" {
		t.Fatalf("testoidc: AddUser needs a username and a password")
	}
	sub, err := p.users.add(u)
	if err != nil {
		t.Fatalf("testoidc: AddUser: %v", err)
	}
	return sub
}

// AuthorizationEndpoint is the OP's authorization endpoint (Issuer + "/auth",
// as discovery also says).
func (p *Provider) AuthorizationEndpoint() string { return p.Issuer + "/auth" }

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("testoidc: random: %v", err)
	}
	return hex.EncodeToString(b)
}

// user is an added user: the example's user record plus its groups.
type user struct {
	storage.User
	groups []string
}

// userStore is the example's fixed user store (storage.NewUserStore) plus the
// users added with AddUser. The example storage calls it under its own lock;
// mu guards extra against AddUser running meanwhile.
type userStore struct {
	storage.UserStore

	mu    sync.Mutex
	extra map[string]*user // by subject
	next  int
}

func (s *userStore) add(u User) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.UserStore.GetUserByUsername(u.Username) != nil || s.byUsername(u.Username) != nil {
		return "", errors.New("username " + u.Username + " is taken")
	}
	s.next++
	sub := "added" + strconv.Itoa(s.next)
	s.extra[sub] = &user{
		User: storage.User{
			ID:                sub,
			Username:          u.Username,
			Password:          u.Password,
			FirstName:         u.FirstName,
			LastName:          u.LastName,
			Email:             u.Email,
			EmailVerified:     u.EmailVerified,
			PreferredLanguage: language.English,
		},
		groups: slices.Clone(u.Groups),
	}
	return sub, nil
}

// byUsername finds an added user; s.mu must be held.
func (s *userStore) byUsername(username string) *user {
	for _, u := range s.extra {
		if u.Username == username {
			return u
		}
	}
	return nil
}

// GetUserByID returns a copy, so the storage never reads a record AddUser
// could be writing.
func (s *userStore) GetUserByID(id string) *storage.User {
	s.mu.Lock()
	u, ok := s.extra[id]
	s.mu.Unlock()
	if ok {
		c := u.User
		return &c
	}
	return s.UserStore.GetUserByID(id)
}

func (s *userStore) GetUserByUsername(username string) *storage.User {
	s.mu.Lock()
	u := s.byUsername(username)
	s.mu.Unlock()
	if u != nil {
		c := u.User
		return &c
	}
	return s.UserStore.GetUserByUsername(username)
}

func (s *userStore) groups(id string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u, ok := s.extra[id]; ok {
		return slices.Clone(u.groups)
	}
	return nil
}

// providerStorage is the example storage with the two changes the package
// comment describes: clients assert userinfo claims in the ID token, and
// users' groups are emitted as a claim.
type providerStorage struct {
	*storage.Storage
	users *userStore
}

// GetClientByClientID wraps the example's client so that
// IDTokenUserinfoClaimsAssertion is true.
func (s *providerStorage) GetClientByClientID(ctx context.Context, clientID string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, clientID)
	if err != nil {
		return nil, err
	}
	return claimsInIDToken{c}, nil
}

// SetUserinfoFromRequest fills the ID token's userinfo claims.
func (s *providerStorage) SetUserinfoFromRequest(ctx context.Context, userinfo *oidc.UserInfo, token op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, userinfo, token, scopes); err != nil {
		return err
	}
	s.addGroups(userinfo, token.GetSubject())
	return nil
}

// SetUserinfoFromToken fills the userinfo endpoint's response.
func (s *providerStorage) SetUserinfoFromToken(ctx context.Context, userinfo *oidc.UserInfo, tokenID, subject, origin string) error {
	if err := s.Storage.SetUserinfoFromToken(ctx, userinfo, tokenID, subject, origin); err != nil {
		return err
	}
	s.addGroups(userinfo, subject)
	return nil
}

func (s *providerStorage) addGroups(userinfo *oidc.UserInfo, subject string) {
	if g := s.users.groups(subject); len(g) > 0 {
		userinfo.AppendClaims(GroupsClaim, g)
	}
}

// claimsInIDToken is a client whose ID tokens carry the userinfo claims.
type claimsInIDToken struct{ op.Client }

func (claimsInIDToken) IDTokenUserinfoClaimsAssertion() bool { return true }
