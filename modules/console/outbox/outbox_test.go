package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/internal/testkit/testmailpit"
	"github.com/civicgate/civicgate/modules/console/outbox"
)

func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := outbox.Migrate(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	return pool
}

// sendAll sends due mails through s until none is due, and returns the
// first send error.
func sendAll(t *testing.T, pool *pgxpool.Pool, s outbox.Sender) error {
	t.Helper()
	from := &mail.Address{Name: "Civic Gate", Address: "noreply@civicgate.test"}
	var first error
	for {
		due, err := outbox.SendOne(t.Context(), pool, func(ctx context.Context, m outbox.Message) error {
			msg, err := outbox.Build(m, from, time.Now())
			if err != nil {
				return err
			}
			return s.Send(ctx, m.To, msg)
		})
		if err != nil && first == nil {
			first = err
		}
		if !due || err != nil {
			return first
		}
	}
}

// TestOutboxSurvivesSMTPOutage: mails enqueued while the SMTP server is down
// are kept (the failure recorded, retried after a backoff) and, once it is
// back, each is delivered exactly once, as multipart/alternative; a sent row
// keeps no body.
func TestOutboxSurvivesSMTPOutage(t *testing.T) {
	pool := newPool(t)
	mp := testmailpit.Start(t)
	cfg, err := outbox.ParseSMTPURL(mp.SMTPURL())
	if err != nil {
		t.Fatal(err)
	}
	sender := &outbox.SMTPSender{Config: cfg, From: "noreply@civicgate.test", Timeout: 5 * time.Second}
	for _, to := range []string{"a@example.org", "b@example.org", "c@example.org"} {
		if err := outbox.Enqueue(t.Context(), pool, outbox.Message{Kind: "verify", To: to, Subject: "Hello " + to,
			Text: "plain " + to, HTML: "<p>html " + to + "</p>"}, 0); err != nil {
			t.Fatal(err)
		}
	}
	mp.Stop()
	if err := sendAll(t, pool, sender); err == nil {
		t.Fatal("sent with the server down")
	}
	var attempts int
	var lastErr string
	var next time.Time
	if err := pool.QueryRow(t.Context(), `SELECT attempts, last_error, next_attempt_at FROM civicgate.mail_outbox WHERE attempts > 0`).
		Scan(&attempts, &lastErr, &next); err != nil {
		t.Fatal(err)
	}
	if attempts != 1 || lastErr == "" || time.Until(next) < time.Second {
		t.Fatalf("failure not recorded with a backoff: attempts %d, error %q, next in %s", attempts, lastErr, time.Until(next))
	}
	if st, err := outbox.Count(t.Context(), pool); err != nil || st.Waiting != 3 {
		t.Fatalf("waiting %+v %v", st, err)
	}
	mp.Start()
	if _, err := pool.Exec(t.Context(), `UPDATE civicgate.mail_outbox SET next_attempt_at = now()`); err != nil { // the backoff has passed
		t.Fatal(err)
	}
	if err := sendAll(t, pool, sender); err != nil {
		t.Fatal(err)
	}
	if err := sendAll(t, pool, sender); err != nil { // nothing is due any more: nothing sent twice
		t.Fatal(err)
	}
	mails := mp.Mails(t)
	if len(mails) != 3 {
		t.Fatalf("%d mails received, want 3", len(mails))
	}
	for _, m := range mails {
		to := m.To[0].Address
		if m.Subject != "Hello "+to || !strings.Contains(m.Text, "plain "+to) || !strings.Contains(m.HTML, "html "+to) {
			t.Errorf("mail %+v", m)
		}
		if ct := strings.Join(m.Headers["Content-Type"], ""); !strings.HasPrefix(ct, "multipart/alternative") {
			t.Errorf("Content-Type %q", ct)
		}
	}
	var bodies int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM civicgate.mail_outbox WHERE sent_at IS NOT NULL AND text_body || html_body <> ''`).
		Scan(&bodies); err != nil || bodies != 0 {
		t.Errorf("sent rows keep %d bodies (%v)", bodies, err)
	}
}

// TestOutboxRefusesHeaderInjectionAndFlood: a recipient or subject with CR
// or LF is refused before it is stored; the outbox holds at most its bound
// of waiting mails.
func TestOutboxRefusesHeaderInjectionAndFlood(t *testing.T) {
	pool := newPool(t)
	for _, m := range []outbox.Message{
		{Kind: "verify", To: "a@example.org\r\nBcc: victim@example.org", Subject: "x", Text: "t", HTML: "h"},
		{Kind: "verify", To: "Eve <a@example.org>", Subject: "x", Text: "t", HTML: "h"},
		{Kind: "verify", To: "a@example.org", Subject: "x\r\nBcc: victim@example.org", Text: "t", HTML: "h"},
		{Kind: "verify", To: "a@example.org", Subject: "x\nX-Evil: 1", Text: "t", HTML: "h"},
	} {
		if err := outbox.Enqueue(t.Context(), pool, m, 0); !errors.Is(err, outbox.ErrBadHeader) {
			t.Errorf("%q / %q: %v, want ErrBadHeader", m.To, m.Subject, err)
		}
	}
	for i := range 3 {
		err := outbox.Enqueue(t.Context(), pool, outbox.Message{Kind: "verify", To: "a@example.org", Subject: "s", Text: "t", HTML: "h"}, 2)
		if (i < 2) != (err == nil) || (i == 2 && !errors.Is(err, outbox.ErrFull)) {
			t.Errorf("mail %d: %v", i, err)
		}
	}
}

// TestParseSMTPURL: the modes, the default ports, and no plain SMTP but to
// a loopback host; an error never repeats the password.
func TestParseSMTPURL(t *testing.T) {
	c, err := outbox.ParseSMTPURL("smtp://user:s3cret@mail.example.org?tls=implicit")
	if err != nil || c.Port != 465 || c.TLS != outbox.TLSImplicit || c.Username != "user" || c.Password != "s3cret" {
		t.Fatalf("%+v %v", c, err)
	}
	if c, err := outbox.ParseSMTPURL("smtp://mail.example.org"); err != nil || c.Port != 587 || c.TLS != outbox.TLSStartTLS {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range []string{"smtp://user:s3cret@mail.example.org?tls=none", "http://user:s3cret@x", "smtp://user:s3cret@x:99999",
		"smtp://user:s3cret@x?tls=maybe", "smtp://user:s3cret@x?s3cret=1"} {
		_, err := outbox.ParseSMTPURL(bad)
		if err == nil || strings.Contains(err.Error(), "s3cret") && !strings.Contains(bad, "?s3cret") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// TestWorkersShareTheOutbox: two workers (two gateways) on one table send
// every mail once between them: SKIP LOCKED hands each row to one.
func TestWorkersShareTheOutbox(t *testing.T) {
	pool := newPool(t)
	mp := testmailpit.Start(t)
	cfg, err := outbox.ParseSMTPURL(mp.SMTPURL())
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	for i := range n {
		if err := outbox.Enqueue(t.Context(), pool, outbox.Message{Kind: "verify", To: fmt.Sprintf("p%d@example.org", i),
			Subject: "s", Text: "t", HTML: "h"}, 0); err != nil {
			t.Fatal(err)
		}
	}
	from := &mail.Address{Address: "noreply@civicgate.test"}
	for range 2 {
		w := &outbox.Worker{Pool: pool, Sender: &outbox.SMTPSender{Config: cfg, From: from.Address}, From: from,
			Interval: 20 * time.Millisecond, Logger: zap.NewNop()}
		w.Start()
		t.Cleanup(w.Stop)
	}
	testenv.Eventually(t, 60*time.Second, "every mail sent", func() error {
		st, err := outbox.Count(t.Context(), pool)
		if err != nil {
			return err
		}
		if st.Sent != n {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
	seen := map[string]int{}
	for _, m := range mp.Mails(t) {
		seen[m.To[0].Address]++
	}
	if len(seen) != n {
		t.Errorf("%d recipients got mail, want %d", len(seen), n)
	}
	for to, c := range seen {
		if c != 1 {
			t.Errorf("%s got %d mails", to, c)
		}
	}
}
