package consolestore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

func newPool(t *testing.T) (*pgxpool.Pool, string) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	is, err := keystore.Issue(ctx, pool, "acme", "free", keystore.EnvLive)
	if err != nil {
		t.Fatal(err)
	}
	return pool, is.OrgID
}

func TestLinkIsUsedOnceEvenConcurrently(t *testing.T) {
	pool, orgID := newPool(t)
	ctx := context.Background()
	l, err := CreateLink(ctx, pool, LinkSpec{Org: "acme", Email: "A@Acme.org", Role: keystore.RoleAdmin, CreatedBy: "cli:test"})
	if err != nil {
		t.Fatal(err)
	}
	var ok atomic.Int32
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := ConsumeLink(ctx, pool, l.Token)
			if err == nil {
				ok.Add(1)
				if id.Email != "a@acme.org" || id.OrgID != orgID || id.Role != keystore.RoleAdmin {
					t.Errorf("identity %+v", id)
				}
			} else if !errors.Is(err, ErrLinkRefused) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 {
		t.Fatalf("link used %d times, want exactly once", ok.Load())
	}
	var stored []byte
	if err := pool.QueryRow(ctx, `SELECT token_hash FROM civicgate.console_links`).Scan(&stored); err != nil || string(stored) == l.Token {
		t.Fatalf("the token itself is stored (or no row): %v", err)
	}
}

func TestLinkRefusals(t *testing.T) {
	pool, _ := newPool(t)
	ctx := context.Background()
	if _, err := CreateLink(ctx, pool, LinkSpec{Org: "nobody", Email: "a@b.c", Role: keystore.RoleAdmin}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown org: %v", err)
	}
	if _, err := CreateLink(ctx, pool, LinkSpec{Org: "", Email: "a@b.c", Role: keystore.RoleViewer}); err == nil {
		t.Error("a viewer link without an organization was created")
	}
	if _, err := CreateLink(ctx, pool, LinkSpec{Org: "acme", Email: "not-an-email", Role: keystore.RoleViewer}); err == nil {
		t.Error("a link for a non-address was created")
	}
	expired, err := CreateLink(ctx, pool, LinkSpec{Org: "acme", Email: "a@b.c", Role: keystore.RoleViewer})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE civicgate.console_links SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{"expired": expired.Token, "unknown": "x", "empty": "", "long": string(make([]byte, 200))} {
		if _, err := ConsumeLink(ctx, pool, tok); !errors.Is(err, ErrLinkRefused) {
			t.Errorf("%s link: %v", name, err)
		}
	}
	op, err := CreateLink(ctx, pool, LinkSpec{Email: "op@example.org", Role: keystore.RoleOperator})
	if err != nil {
		t.Fatal(err)
	}
	if id, err := ConsumeLink(ctx, pool, op.Token); err != nil || id.OrgID != "" || id.Role != keystore.RoleOperator {
		t.Errorf("operator link: %+v %v", id, err)
	}
}

func TestSessionTimeoutsAndSignOut(t *testing.T) {
	pool, orgID := newPool(t)
	ctx := context.Background()
	id := Identity{Email: "a@acme.org", OrgID: orgID, Role: keystore.RoleViewer}
	to := Timeouts{Idle: 30 * time.Minute, Lifetime: 12 * time.Hour}
	a, err := NewSession(ctx, pool, id, "link", "192.0.2.1", to)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewSession(ctx, pool, id, "oidc", "192.0.2.2", to)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := Touch(ctx, pool, a, to.Idle); err != nil || s.Identity != id || s.Via != "link" {
		t.Fatalf("live session: %+v %v", s, err)
	}
	// Idle: the last request 31 minutes ago.
	if _, err := pool.Exec(ctx, `UPDATE civicgate.console_sessions SET last_seen_at = now() - interval '31 minutes' WHERE via = 'link'`); err != nil {
		t.Fatal(err)
	}
	if _, err := Touch(ctx, pool, a, to.Idle); !errors.Is(err, ErrNoSession) {
		t.Errorf("idle session still live: %v", err)
	}
	// A request 2 minutes after the last one restarts the idle clock.
	if _, err := pool.Exec(ctx, `UPDATE civicgate.console_sessions SET last_seen_at = now() - interval '2 minutes' WHERE via = 'oidc'`); err != nil {
		t.Fatal(err)
	}
	if _, err := Touch(ctx, pool, b, to.Idle); err != nil {
		t.Fatal(err)
	}
	var age time.Duration
	if err := pool.QueryRow(ctx, `SELECT now() - last_seen_at FROM civicgate.console_sessions WHERE via = 'oidc'`).Scan(&age); err != nil || age > time.Minute {
		t.Errorf("idle clock not restarted: %s %v", age, err)
	}
	// Absolute lifetime.
	if _, err := pool.Exec(ctx, `UPDATE civicgate.console_sessions SET expires_at = now() - interval '1 second' WHERE via = 'oidc'`); err != nil {
		t.Fatal(err)
	}
	if _, err := Touch(ctx, pool, b, to.Idle); !errors.Is(err, ErrNoSession) {
		t.Errorf("session past its lifetime still live: %v", err)
	}
	// Sign out everywhere ends every session of the address: the two new
	// ones, and the idle and expired ones, which were never signed out.
	c, _ := NewSession(ctx, pool, id, "link", "", to)
	d, _ := NewSession(ctx, pool, id, "link", "", to)
	if n, err := EndAll(ctx, pool, id.Email); err != nil || n != 4 {
		t.Fatalf("EndAll: %d %v", n, err)
	}
	for _, tok := range []string{c, d} {
		if _, err := Touch(ctx, pool, tok, to.Idle); !errors.Is(err, ErrNoSession) {
			t.Errorf("session survived sign-out everywhere: %v", err)
		}
	}
	// A deleted organization's sessions end.
	e, _ := NewSession(ctx, pool, id, "link", "", to)
	if _, err := keystore.DeleteOrg(ctx, pool, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := Touch(ctx, pool, e, to.Idle); !errors.Is(err, ErrNoSession) {
		t.Errorf("session of a deleted organization still live: %v", err)
	}
}

func TestOIDCFlowIsSingleUse(t *testing.T) {
	pool, _ := newPool(t)
	ctx := context.Background()
	if err := SaveOIDCFlow(ctx, pool, "state-1", "verifier", "nonce"); err != nil {
		t.Fatal(err)
	}
	if v, n, err := TakeOIDCFlow(ctx, pool, "state-1"); err != nil || v != "verifier" || n != "nonce" {
		t.Fatalf("%q %q %v", v, n, err)
	}
	if _, _, err := TakeOIDCFlow(ctx, pool, "state-1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("flow used twice: %v", err)
	}
}
