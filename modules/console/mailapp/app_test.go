package mailapp_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/adapttest"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/internal/testkit/testmailpit"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/console/consolestore"
	_ "github.com/civicgate/civicgate/modules/console/mailapp"
	"github.com/civicgate/civicgate/modules/console/notices"
	"github.com/civicgate/civicgate/modules/console/outbox"
)

// TestCaddyfileAdapt runs the golden files in testdata/caddyfile_adapt.
func TestCaddyfileAdapt(t *testing.T) { adapttest.Golden(t) }

func TestCaddyfileErrors(t *testing.T) {
	g := func(body string) string { return "{\ncivic_mail {\n" + body + "\n}\n}\n:8080 {\nrespond ok\n}" }
	adapttest.Refused(t, map[string]adapttest.Refusal{
		"unknown option":     {g("smpt x"), `civic_mail: unknown option "smpt"`},
		"max_pending zero":   {g("max_pending 0"), "max_pending"},
		"key_expiry bad":     {g("notices {\nkey_expiry soon\n}"), `want a positive duration (7d) or off, got "soon"`},
		"deprecations maybe": {g("notices {\ndeprecations maybe\n}"), `want on or off, got "maybe"`},
		"given twice":        {"{\ncivic_mail {\n}\ncivic_mail {\n}\n}\n:8080 {\nrespond ok\n}", "global option given twice"},
	})
}

func config(smtp, ca, interval string) []byte {
	src := fmt.Sprintf(`{
	admin off
	civic_mail {
		database {env.CIVIC_MAIL_TEST_DSN}
		from "Civic Gate <noreply@civicgate.test>"
		smtp %s
		smtp_ca %s
		site_url https://console.example.org
		interval %s
		notices {
			interval 50ms
		}
	}
}
:0 {
	respond ok
}
`, smtp, ca, interval)
	cfg, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(src), nil)
	if err != nil {
		panic(err)
	}
	return cfg
}

// TestAppSendsAcrossAReload: civic_mail's worker, started with the app,
// sends what is enqueued and the notices its round finds (an expiring key's
// admin is told), keeps sending after a reload (the new app's worker), each
// mail exactly once; after Stop nothing is sent. The server requires
// STARTTLS and AUTH; its certificate is trusted through smtp_ca.
func TestAppSendsAcrossAReload(t *testing.T) {
	dsn := testenv.Postgres(t)
	pool, err := pgxpool.New(t.Context(), dsn)
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
	cert, key, ca := testmailpit.Certificate(t)
	mp := testmailpit.StartWith(t, testmailpit.Options{TLSCert: cert, TLSKey: key, RequireSTARTTLS: true,
		AuthFile: testmailpit.AuthFile(t, "mailer", "s3cret")})
	smtpURL := fmt.Sprintf("smtp://mailer:s3cret@127.0.0.1:%d?tls=starttls", mp.SMTPPort)
	t.Setenv("CIVIC_MAIL_TEST_DSN", dsn)
	if _, err := keystore.IssueWith(t.Context(), pool, keystore.IssueSpec{Org: "acme", Tier: "paid", Env: "live",
		Lifecycle: keystore.Lifecycle{ExpiresAt: time.Now().Add(3 * 24 * time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := consolestore.CreateLink(t.Context(), pool, consolestore.LinkSpec{Org: "acme", Email: "ada@example.org",
		Role: keystore.RoleAdmin, CreatedBy: "test", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := caddy.Load(config(smtpURL, ca, "50ms"), true); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = caddy.Stop()
		}
	})
	enqueue := func(to string) {
		t.Helper()
		if err := outbox.Enqueue(t.Context(), pool, outbox.Message{Kind: "test", To: to, Subject: "to " + to, Text: "t", HTML: "h"}, 0); err != nil {
			t.Fatal(err)
		}
	}
	awaitSent := func(n int) {
		t.Helper()
		testenv.Eventually(t, 30*time.Second, fmt.Sprintf("%d mails sent", n), func() error {
			st, err := outbox.Count(t.Context(), pool)
			if err != nil || st.Sent != n || st.Waiting != 0 {
				return fmt.Errorf("%+v %v", st, err)
			}
			return nil
		})
	}
	enqueue("a@example.org")
	awaitSent(2) // a, and the key expiry notice
	if err := caddy.Load(config(smtpURL, ca, "40ms"), true); err != nil {
		t.Fatal(err)
	}
	enqueue("b@example.org")
	awaitSent(3)
	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	enqueue("c@example.org")
	if st, err := outbox.Count(t.Context(), pool); err != nil || st.Waiting != 1 || st.Sent != 3 {
		t.Fatalf("after Stop: %+v %v", st, err)
	}
	seen := map[string]int{}
	for _, m := range mp.Mails(t) {
		seen[m.To[0].Address]++
		if m.To[0].Address == "ada@example.org" && !strings.Contains(m.Subject, "expires in 3 days") {
			t.Errorf("notice subject %q", m.Subject)
		}
	}
	if len(seen) != 3 || seen["a@example.org"] != 1 || seen["b@example.org"] != 1 || seen["ada@example.org"] != 1 {
		t.Fatalf("mails: %v", seen)
	}
}
