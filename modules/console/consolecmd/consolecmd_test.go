package consolecmd

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/clirun"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestExitCodesAndMessages pins what `civicgate console link` and `civicgate
// audit` answer before they reach a database: the help once for --help (exit
// 0), exit 2 and the usage for a bad command line, exit 1 and the reason
// without DATABASE_URL, and a DSN that does not parse never echoed (it may
// hold a password).
func TestExitCodesAndMessages(t *testing.T) {
	const (
		linkUsage  = consoleUsageText
		auditUsage = auditUsageText
		auditBad   = "civicgate audit: takes only --org, --since (positive), --limit (1..1000) and --json\n" + auditUsage
		linkNeeds  = "civicgate console link: needs --email, a role of viewer, admin or operator, and --org unless the role is operator\n"
	)
	none := func(string) string { return "" }
	secretDSN := func(k string) string {
		return map[string]string{"DATABASE_URL": "postgres://u:hunter2@127.0.0.1:1/x?sslmode=bogus"}[k]
	}
	for _, tc := range []struct {
		name   string
		run    clirun.Func
		args   []string
		getenv func(string) string
		code   int
		stderr string
	}{
		{"console", RunConsole, nil, none, 2, linkUsage},
		{"console", RunConsole, []string{"--help"}, none, 0, linkUsage},
		{"console", RunConsole, []string{"help"}, none, 0, linkUsage},
		// Before, the flag package's "Usage of console link:" block answered, with exit 2.
		{"console", RunConsole, []string{"link", "--help"}, none, 0, linkUsage},
		{"console", RunConsole, []string{"link", "-h"}, none, 0, linkUsage},
		{"console", RunConsole, []string{"unlink"}, none, 2, "civicgate console: bad usage: unknown command unlink\n" + linkUsage},
		{"console", RunConsole, []string{"link", "--bogus"}, none, 2,
			"civicgate console link: bad usage: flag provided but not defined: -bogus\n" + linkUsage},
		{"console", RunConsole, []string{"link", "--email", "a@example.com", "acme"}, none, 2,
			"civicgate console link: bad usage: link takes only flags, not \"acme\"\n" + linkUsage},
		{"console", RunConsole, []string{"link", "--email", "a@example.com"}, none, 2, linkNeeds},
		{"console", RunConsole, []string{"link", "--org", "acme", "--email", "a@example.com", "--role", "owner"}, none, 2, linkNeeds},
		{"console", RunConsole, []string{"link", "--org", "acme", "--email", "a@example.com", "--url", "http://console.example"}, none, 2,
			"civicgate console link: --url must be an https:// address\n"},
		{"console", RunConsole, []string{"link", "--org", "acme", "--email", "a@example.com"}, none, 1,
			"civicgate console link: DATABASE_URL is not set\n"},
		{"console", RunConsole, []string{"link", "--email", "op@example.com", "--role", "operator"}, secretDSN, 1,
			"civicgate console link: cannot parse DATABASE_URL\n"},
		{"console", RunConsole, []string{"migrate", "extra"}, none, 2, linkUsage},
		{"console", RunConsole, []string{"migrate", "--help"}, none, 0, linkUsage},
		{"console", RunConsole, []string{"migrate"}, none, 1, "civicgate console migrate: DATABASE_URL is not set\n"},
		{"console", RunConsole, []string{"migrate"}, secretDSN, 1, "civicgate console migrate: cannot parse DATABASE_URL\n"},
		// Before, --help printed the flag package's block, then the one-line usage, and exited 2.
		{"audit", RunAudit, []string{"--help"}, none, 0, auditUsage},
		{"audit", RunAudit, []string{"-h"}, none, 0, auditUsage},
		{"audit", RunAudit, []string{"--bogus"}, none, 2, "civicgate audit: bad usage: flag provided but not defined: -bogus\n" + auditUsage},
		{"audit", RunAudit, []string{"--limit", "0"}, none, 2, auditBad},
		{"audit", RunAudit, []string{"extra"}, none, 2, auditBad},
		{"audit", RunAudit, nil, none, 1, "civicgate audit: DATABASE_URL is not set\n"},
		{"audit", RunAudit, []string{"--org", "acme"}, secretDSN, 1, "civicgate audit: cannot parse DATABASE_URL\n"},
	} {
		var stdout, stderr bytes.Buffer
		code := tc.run(context.Background(), tc.args, &stdout, &stderr, tc.getenv)
		if code != tc.code || stderr.String() != tc.stderr || stdout.Len() != 0 {
			t.Errorf("%s %q: exit %d, stderr %q, stdout %q; want %d, %q", tc.name, tc.args, code, stderr.String(), stdout.String(), tc.code, tc.stderr)
		}
		if strings.Contains(stderr.String(), "hunter2") {
			t.Errorf("%s %q: the password reached the output", tc.name, tc.args)
		}
	}
}

// TestAuditBeforeMigrate: `civicgate audit` on a database without the audit
// log says which command creates it, without the key store's package prefix
// or the driver's message.
func TestAuditBeforeMigrate(t *testing.T) {
	dsn := testenv.Postgres(t)
	var stdout, stderr bytes.Buffer
	code := RunAudit(context.Background(), nil, &stdout, &stderr, func(k string) string { return map[string]string{"DATABASE_URL": dsn}[k] })
	want := "civicgate audit: this database has no audit log yet: run civicgate keys migrate (or civicgate console migrate)\n"
	if code != 1 || stdout.Len() != 0 || stderr.String() != want {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 and %q", code, stdout.String(), stderr.String(), want)
	}
}

// TestConsoleMigrate: `civicgate console migrate` creates every table the
// console uses — the key store's, the usage tables, its own — and can run
// again.
func TestConsoleMigrate(t *testing.T) {
	dsn := testenv.Postgres(t)
	getenv := func(k string) string { return map[string]string{"DATABASE_URL": dsn}[k] }
	for range 2 {
		var stdout, stderr bytes.Buffer
		if code := RunConsole(context.Background(), []string{"migrate"}, &stdout, &stderr, getenv); code != 0 ||
			stdout.String() != "console, key and usage tables are up to date\n" {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
		}
	}
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_tables WHERE schemaname = 'civicgate'
		AND tablename IN ('organizations', 'api_keys', 'audit_log', 'usage_minute', 'console_links', 'console_sessions', 'console_oidc_flows')`).Scan(&n); err != nil || n != 7 {
		t.Fatalf("%d of the 7 tables %v", n, err)
	}
}
