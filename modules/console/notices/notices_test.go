package notices_test

import (
	"context"
	"fmt"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/internal/testkit/testmailpit"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/console/consolestore"
	"github.com/civicgate/civicgate/modules/console/notices"
	"github.com/civicgate/civicgate/modules/console/outbox"
	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

func newPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := consolestore.Migrate(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	if err := notices.Migrate(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	return pool
}

// admin makes addr an admin of org as an operator's sign-in link does.
func admin(t testing.TB, pool *pgxpool.Pool, org, addr string) {
	t.Helper()
	if _, err := consolestore.CreateLink(t.Context(), pool, consolestore.LinkSpec{Org: org, Email: addr, Role: keystore.RoleAdmin,
		CreatedBy: "test", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
}

// clock is the runner's injected time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// deliver sends every due mail to mp, as the civic_mail worker does.
func deliver(t *testing.T, pool *pgxpool.Pool, mp *testmailpit.Server) {
	t.Helper()
	cfg, err := outbox.ParseSMTPURL(mp.SMTPURL())
	if err != nil {
		t.Fatal(err)
	}
	from := &mail.Address{Name: "Civic Gate", Address: "noreply@civicgate.test"}
	s := &outbox.SMTPSender{Config: cfg, From: from.Address}
	for {
		due, err := outbox.SendOne(t.Context(), pool, func(ctx context.Context, m outbox.Message) error {
			b, err := outbox.Build(m, from, time.Now())
			if err != nil {
				return err
			}
			return s.Send(ctx, m.To, b)
		})
		if err != nil {
			t.Fatal(err)
		}
		if !due {
			return
		}
	}
}

// TestKeyExpiryNoticeOnce: a key's admins are told once, by a plain text and
// HTML mail naming the key by its prefix (never its secret), when the
// injected clock comes within 7 days of its expiry — not before, not again;
// a key of another organization and a key without expiry give nothing to
// anyone else.
func TestKeyExpiryNoticeOnce(t *testing.T) {
	pool := newPool(t)
	mp := testmailpit.Start(t)
	ctx := t.Context()
	expires := time.Now().Add(10 * 24 * time.Hour).Truncate(time.Second)
	k, err := keystore.IssueWith(ctx, pool, keystore.IssueSpec{Org: "acme", Tier: "paid", Env: "live",
		Lifecycle: keystore.Lifecycle{Name: "nightly import", ExpiresAt: expires}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keystore.IssueWith(ctx, pool, keystore.IssueSpec{Org: "acme", Tier: "paid", Env: "live"}); err != nil {
		t.Fatal(err)
	}
	if _, err := keystore.IssueWith(ctx, pool, keystore.IssueSpec{Org: "other", Tier: "paid", Env: "live"}); err != nil {
		t.Fatal(err)
	}
	admin(t, pool, "acme", "ada@example.org")
	admin(t, pool, "acme", "bob@example.org")
	admin(t, pool, "other", "eve@example.org")
	c := &clock{t: time.Now()}
	r := &notices.Runner{Pool: pool, Sources: []notices.Source{notices.KeyExpiry{SiteURL: "https://console.example.org"}},
		Now: c.now, Logger: zap.NewNop()}
	if n, err := r.Once(ctx); err != nil || n != 0 {
		t.Fatalf("10 days before: %d mails, %v", n, err)
	}
	c.t = expires.Add(-6 * 24 * time.Hour)
	if n, err := r.Once(ctx); err != nil || n != 2 {
		t.Fatalf("6 days before: %d mails, %v; want one per admin", n, err)
	}
	c.t = c.t.Add(24 * time.Hour)
	if n, err := r.Once(ctx); err != nil || n != 0 {
		t.Fatalf("again: %d mails, %v", n, err)
	}
	deliver(t, pool, mp)
	mails := mp.Mails(t)
	if len(mails) != 2 {
		t.Fatalf("%d mails, want 2", len(mails))
	}
	for _, m := range mails {
		to := m.To[0].Address
		if to != "ada@example.org" && to != "bob@example.org" {
			t.Errorf("mailed %s", to)
		}
		if m.Subject != "Your API key of acme expires in 6 days" {
			t.Errorf("subject %q", m.Subject)
		}
		for part, body := range map[string]string{"text": m.Text, "HTML": m.HTML} {
			if strings.Contains(body, k.Key) {
				t.Errorf("%s part holds the key", part)
			}
			for _, want := range []string{k.ID, "nightly import", expires.UTC().Format("2 January 2006"),
				"https://console.example.org/orgs/"} {
				if !strings.Contains(body, want) {
					t.Errorf("%s part lacks %q:\n%s", part, want, body)
				}
			}
		}
		if ct := strings.Join(m.Headers["Content-Type"], ""); !strings.HasPrefix(ct, "multipart/alternative") {
			t.Errorf("Content-Type %q", ct)
		}
	}
}

type orgOf string

func (o orgOf) Org() string { return string(o) }

// recordOps writes n requests of op by key of org at at, as a gateway's flush.
func recordOps(t *testing.T, pool *pgxpool.Pool, key, org string, op *contract.GraphQLOperation, n int, at time.Time) {
	t.Helper()
	m := usage.NewOperationMeter(0, 0)
	for range n {
		m.Add(&usage.OperationSample{KeyID: key, Org: orgOf(org), At: at, Operation: op, Cost: 1, Latency: time.Millisecond})
	}
	ops, recs := m.Drain()
	if _, err := usage.WriteFlush(t.Context(), pool, usage.NewBatchID(), usage.Batch{Operations: ops, Records: recs}); err != nil {
		t.Fatal(err)
	}
}

func deprecatedOp(name string, hash int, coordinate, reason string) *contract.GraphQLOperation {
	return &contract.GraphQLOperation{Type: "query", Name: name, DocumentHash: fmt.Sprintf("%064x", hash),
		Shape: &contract.OperationShape{Coordinates: []string{coordinate, "Query.bills"}, Deprecated: []string{coordinate},
			DeprecationReasons: []string{reason}, Normalized: "query " + name + "{x}"}}
}

// TestDeprecationNoticeOnce: an organization whose operations read a
// deprecated field has its admins told once per coordinate, with the
// webhook notice's bound of operations (the most requests first, the rest
// counted); an organization that reads none is told nothing.
func TestDeprecationNoticeOnce(t *testing.T) {
	pool := newPool(t)
	mp := testmailpit.Start(t)
	ctx := t.Context()
	a, err := keystore.Issue(ctx, pool, "dep-a", "paid", "live")
	if err != nil {
		t.Fatal(err)
	}
	b, err := keystore.Issue(ctx, pool, "dep-b", "paid", "live")
	if err != nil {
		t.Fatal(err)
	}
	admin(t, pool, "dep-a", "ada@example.org")
	admin(t, pool, "dep-b", "bob@example.org")
	now := time.Now()
	const bound = 20
	for i := range bound + 5 {
		recordOps(t, pool, a.ID, a.OrgID, deprecatedOp(fmt.Sprintf("Op%02d", i), 0x100+i, "Bill.title", "Use name"), i+1, now)
	}
	recordOps(t, pool, b.ID, b.OrgID, &contract.GraphQLOperation{Type: "query", Name: "Plain", DocumentHash: fmt.Sprintf("%064x", 0xd),
		Shape: &contract.OperationShape{Coordinates: []string{"Bill.name"}, Normalized: "query Plain{x}"}}, 3, now)
	r := &notices.Runner{Pool: pool, Sources: []notices.Source{notices.Deprecations{MaxOperations: bound}},
		Now: time.Now, Logger: zap.NewNop()}
	if n, err := r.Once(ctx); err != nil || n != 1 {
		t.Fatalf("first round: %d mails, %v", n, err)
	}
	if n, err := r.Once(ctx); err != nil || n != 0 {
		t.Fatalf("second round: %d mails, %v", n, err)
	}
	deliver(t, pool, mp)
	mails := mp.Mails(t)
	if len(mails) != 1 || mails[0].To[0].Address != "ada@example.org" {
		t.Fatalf("mails %+v", mails)
	}
	m := mails[0]
	if m.Subject != "A field your API calls use is deprecated: Bill.title" {
		t.Errorf("subject %q", m.Subject)
	}
	if !strings.Contains(m.Text, "Op24") || strings.Contains(m.Text, "Op04 ") || !strings.Contains(m.Text, "and 5 more operations") ||
		!strings.Contains(m.Text, "Use name") || strings.Count(m.HTML, "<li>") != bound {
		t.Errorf("text:\n%s\nHTML:\n%s", m.Text, m.HTML)
	}
}

// TestKeyExpiryLeavesOut: only active keys of active organizations are due;
// a revoked key, a key of a suspended organization and a key already
// expired are not, and a key expiring beyond the window is not yet.
func TestKeyExpiryLeavesOut(t *testing.T) {
	pool := newPool(t)
	ctx := t.Context()
	soon := keystore.Lifecycle{ExpiresAt: time.Now().Add(3 * 24 * time.Hour)}
	issue := func(org string, l keystore.Lifecycle) keystore.Issued {
		t.Helper()
		k, err := keystore.IssueWith(ctx, pool, keystore.IssueSpec{Org: org, Tier: "paid", Env: "live", Lifecycle: l})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	due := issue("due", soon)
	revoked := issue("revoked", soon)
	suspended := issue("suspended", soon)
	expired := issue("expired", soon)
	issue("later", keystore.Lifecycle{ExpiresAt: time.Now().Add(30 * 24 * time.Hour)})
	for _, q := range []struct {
		sql string
		arg string
	}{
		{`UPDATE civicgate.api_keys SET status = 'revoked', retired_at = now() WHERE id = $1`, revoked.ID},
		{`UPDATE civicgate.organizations SET status = 'suspended', suspended_at = now() WHERE id = $1`, suspended.OrgID},
		{`UPDATE civicgate.api_keys SET created_at = now() - interval '2 days', expires_at = now() - interval '1 minute' WHERE id = $1`, expired.ID},
	} {
		if _, err := pool.Exec(ctx, q.sql, q.arg); err != nil {
			t.Fatal(err)
		}
	}
	ns, err := notices.KeyExpiry{}.Due(ctx, pool, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) != 1 || ns[0].Org != due.OrgID || !strings.HasPrefix(ns[0].Subject, due.ID+"@") {
		t.Fatalf("due: %+v, want only %s", ns, due.ID)
	}
}
