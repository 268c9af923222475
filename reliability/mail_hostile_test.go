package reliability

import (
	"context"
	"fmt"
	"net/mail"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/internal/testkit/testmailpit"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/console/consolestore"
	"github.com/civicgate/civicgate/modules/console/notices"
	"github.com/civicgate/civicgate/modules/console/outbox"
	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// The notice mails against hostile names and volume (docs/design.md D82),
// on real PostgreSQL and a real SMTP server (Mailpit): an organization name
// and an admin address carrying a header (CR LF Bcc) inject nothing; markup
// in a deprecation reason and an operation name stays text in the HTML part;
// a flood of expiring keys fills the outbox to its bound and no further, and
// every notice still arrives once as the outbox drains.

func mailPool(t *testing.T) *pgxpool.Pool {
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

// mailAdmin records addr as an admin of orgID as a sign-in link row does,
// written straight to the table: the hostile address an older version, or a
// hand-edited row, could have left there.
func mailAdmin(t *testing.T, pool *pgxpool.Pool, orgID, addr string) {
	t.Helper()
	if _, err := pool.Exec(t.Context(), `INSERT INTO civicgate.console_links (token_hash, org_id, email, role, created_by, expires_at)
		VALUES (sha256(convert_to($1 || $2, 'UTF8')), $1, $2, 'admin', 'test', now() + interval '1 hour')`, orgID, addr); err != nil {
		t.Fatal(err)
	}
}

// drainOutbox sends every due mail to mp and returns how many.
func drainOutbox(t *testing.T, pool *pgxpool.Pool, mp *testmailpit.Server) int {
	t.Helper()
	cfg, err := outbox.ParseSMTPURL(mp.SMTPURL())
	if err != nil {
		t.Fatal(err)
	}
	from := &mail.Address{Name: "Civic Gate", Address: "noreply@civicgate.test"}
	s := &outbox.SMTPSender{Config: cfg, From: from.Address}
	n := 0
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
			return n
		}
		n++
	}
}

// TestNoticeMailHeaderInjection: an organization named with CR LF and a
// Bcc header, and an admin address carrying one, inject no header and reach
// no third address; the subject is one line; the refused address is
// skipped and the organization's other admin is mailed.
func TestNoticeMailHeaderInjection(t *testing.T) {
	pool := mailPool(t)
	mp := testmailpit.Start(t)
	const org = "evil\r\nBcc: victim@example.org\r\nX-Injected: 1"
	k, err := keystore.IssueWith(t.Context(), pool, keystore.IssueSpec{Org: org, Tier: "paid", Env: "live",
		Lifecycle: keystore.Lifecycle{ExpiresAt: time.Now().Add(2 * 24 * time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	mailAdmin(t, pool, k.OrgID, "ada@example.org")
	mailAdmin(t, pool, k.OrgID, "bob@example.org\r\nBcc: victim@example.org")
	r := &notices.Runner{Pool: pool, Sources: []notices.Source{notices.KeyExpiry{}}, Now: time.Now, Logger: zap.NewNop()}
	if n, err := r.Once(t.Context()); err != nil || n != 1 {
		t.Fatalf("%d mails, %v; want 1 (the hostile address skipped)", n, err)
	}
	if n := drainOutbox(t, pool, mp); n != 1 {
		t.Fatalf("%d sent", n)
	}
	mails := mp.Mails(t)
	if len(mails) != 1 || len(mails[0].To) != 1 || mails[0].To[0].Address != "ada@example.org" {
		t.Fatalf("mails %+v", mails)
	}
	m := mails[0]
	for name, v := range m.Headers {
		if strings.EqualFold(name, "Bcc") || strings.EqualFold(name, "X-Injected") {
			t.Errorf("injected header %s: %v", name, v)
		}
	}
	if strings.ContainsAny(m.Subject, "\r\n") || !strings.Contains(m.Subject, "Bcc: victim@example.org") {
		t.Errorf("subject %q: want the name as one line of text", m.Subject)
	}
	if len(mp.MailsTo(t, "victim@example.org")) != 0 {
		t.Error("the victim got mail")
	}
}

// TestNoticeMailMarkupEscaped: markup in a deprecation reason and in an
// operation's name is text of the HTML part (escaped), never elements.
func TestNoticeMailMarkupEscaped(t *testing.T) {
	pool := mailPool(t)
	mp := testmailpit.Start(t)
	k, err := keystore.Issue(t.Context(), pool, "markup", "paid", "live")
	if err != nil {
		t.Fatal(err)
	}
	mailAdmin(t, pool, k.OrgID, "ada@example.org")
	const reason = `</p><script>alert(1)</script><a href="javascript:x">`
	const opName = `<img src=x onerror=alert(2)>`
	m := usage.NewOperationMeter(0, 0)
	op := &contract.GraphQLOperation{Type: "query", Name: opName, DocumentHash: fmt.Sprintf("%064x", 0xbad),
		Shape: &contract.OperationShape{Coordinates: []string{"Bill.title"}, Deprecated: []string{"Bill.title"},
			DeprecationReasons: []string{reason}, Normalized: "query X{x}"}}
	m.Add(&usage.OperationSample{KeyID: k.ID, Org: orgIDOf(k.OrgID), At: time.Now(), Operation: op, Cost: 1, Latency: time.Millisecond})
	ops, recs := m.Drain()
	if _, err := usage.WriteFlush(t.Context(), pool, usage.NewBatchID(), usage.Batch{Operations: ops, Records: recs}); err != nil {
		t.Fatal(err)
	}
	r := &notices.Runner{Pool: pool, Sources: []notices.Source{notices.Deprecations{MaxOperations: 20}}, Now: time.Now, Logger: zap.NewNop()}
	if n, err := r.Once(t.Context()); err != nil || n != 1 {
		t.Fatalf("%d mails, %v", n, err)
	}
	drainOutbox(t, pool, mp)
	mails := mp.Mails(t)
	if len(mails) != 1 {
		t.Fatalf("%d mails", len(mails))
	}
	h := mails[0].HTML
	for _, bad := range []string{"<script", "<img", `href="javascript`, "</p><"} {
		if strings.Contains(h, bad) {
			t.Errorf("the HTML part holds %q:\n%s", bad, h)
		}
	}
	for _, want := range []string{"&lt;script&gt;", "&lt;img src=x onerror=alert(2)&gt;"} {
		if !strings.Contains(h, want) {
			t.Errorf("the HTML part lacks %q:\n%s", want, h)
		}
	}
	if !strings.Contains(mails[0].Text, reason) || !strings.Contains(mails[0].Text, opName) {
		t.Errorf("the text part should quote them as text:\n%s", mails[0].Text)
	}
}

type orgIDOf string

func (o orgIDOf) Org() string { return string(o) }

// TestExpiringKeyFlood: 60 organizations' keys expiring at once against an
// outbox bounded at 25 mails: a round enqueues up to the bound and records
// only the notices it mailed; as the outbox drains, later rounds mail the
// rest; in the end every admin has exactly one mail.
func TestExpiringKeyFlood(t *testing.T) {
	pool := mailPool(t)
	mp := testmailpit.Start(t)
	const orgs, bound = 60, 25
	for i := range orgs {
		k, err := keystore.IssueWith(t.Context(), pool, keystore.IssueSpec{Org: fmt.Sprintf("flood-%02d", i), Tier: "paid", Env: "live",
			Lifecycle: keystore.Lifecycle{ExpiresAt: time.Now().Add(time.Duration(24+i) * time.Hour)}})
		if err != nil {
			t.Fatal(err)
		}
		mailAdmin(t, pool, k.OrgID, fmt.Sprintf("admin%02d@example.org", i))
	}
	r := &notices.Runner{Pool: pool, Sources: []notices.Source{notices.KeyExpiry{}}, MaxPending: bound, Now: time.Now, Logger: zap.NewNop()}
	total := 0
	for round := 0; total < orgs; round++ {
		if round > 5 {
			t.Fatalf("%d mails after %d rounds", total, round)
		}
		n, err := r.Once(t.Context())
		if n < orgs-total && !strings.Contains(fmt.Sprint(err), outbox.ErrFull.Error()) {
			t.Fatalf("round %d: %d mails, %v; want the outbox full", round, n, err)
		}
		st, cerr := outbox.Count(t.Context(), pool)
		if cerr != nil || st.Waiting > bound {
			t.Fatalf("round %d: outbox %+v %v: the bound did not hold", round, st, cerr)
		}
		var recorded int
		if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM civicgate.mail_notices`).Scan(&recorded); err != nil {
			t.Fatal(err)
		}
		total += n
		if recorded != total {
			t.Fatalf("round %d: %d notices recorded, %d mailed", round, recorded, total)
		}
		drainOutbox(t, pool, mp)
	}
	seen := map[string]int{}
	for _, m := range mp.Mails(t) {
		seen[m.To[0].Address]++
	}
	if len(seen) != orgs {
		t.Fatalf("%d admins mailed, want %d", len(seen), orgs)
	}
	for a, c := range seen {
		if c != 1 {
			t.Errorf("%s got %d mails", a, c)
		}
	}
}

var stackKey = regexp.MustCompile(`cg_(live|test)_[A-Za-z0-9]+`)

// TestNoticeMailThroughTheBinary: the built gateway on the shipped
// Caddyfile.local, mail through a real SMTP server: a key issued by the CLI
// to expire in 3 days, with markup in its name, reaches the organization's
// admin (a `console link --role admin` address) as one notice, soon after
// the gateway starts; the mail holds no key, the name is escaped in HTML,
// and no log line holds the key.
func TestNoticeMailThroughTheBinary(t *testing.T) {
	mp := testmailpit.Start(t)
	s := stack.New(t, &bins)
	s.Prepare()
	out := s.Run(s.Bins.Civicgate, "keys", "issue", "--org", "acme", "--tier", "free", "--env", "live",
		"--expires", "3d", "--name", "<b>nightly</b>")
	key := stackKey.FindString(out)
	if key == "" {
		t.Fatal("keys issue printed no key")
	}
	s.Run(s.Bins.Civicgate, "console", "link", "--org", "acme", "--email", "ada@example.org", "--role", "admin")
	s.Setenv("CIVICGATE_MAIL_FROM", "civicgate <noreply@civicgate.test>")
	s.Setenv("CIVICGATE_SMTP_URL", mp.SMTPURL())
	s.StartRecordsd()
	s.StartGateway("caddyfile/Caddyfile.local")
	var got []testmailpit.Mail
	testenv.Eventually(t, 90*time.Second, "the expiry notice", func() error {
		if got = mp.MailsTo(t, "ada@example.org"); len(got) == 0 {
			return fmt.Errorf("no mail yet")
		}
		return nil
	})
	if len(got) != 1 {
		t.Fatalf("%d mails, want 1", len(got))
	}
	m := got[0]
	if !strings.HasPrefix(m.Subject, "Your API key of acme expires ") {
		t.Errorf("subject %q", m.Subject)
	}
	if strings.Contains(m.Text+m.HTML, key) {
		t.Error("the notice holds the key")
	}
	if strings.Contains(m.HTML, "<b>nightly") || !strings.Contains(m.HTML, "&lt;b&gt;nightly&lt;/b&gt;") {
		t.Errorf("the key's name in HTML:\n%s", m.HTML)
	}
	if !strings.Contains(m.Text, s.Getenv("CIVICGATE_CONSOLE_URL")+"/orgs/") {
		t.Errorf("no console link:\n%s", m.Text)
	}
	s.CheckLogs(t, key)
}
