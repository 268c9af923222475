package webhookcmd

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

func TestMigrateCommand(t *testing.T) {
	dsn := testenv.Postgres(t)
	env := func(k string) string {
		if k == "DATABASE_URL" {
			return dsn
		}
		return ""
	}
	for range 2 { // idempotent
		var out, errOut bytes.Buffer
		if code := Run(context.Background(), []string{"migrate"}, &out, &errOut, env); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		if !strings.Contains(out.String(), "up to date") {
			t.Fatalf("output %q", out.String())
		}
	}
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var tables string
	if err := conn.QueryRow(context.Background(), `SELECT string_agg(tablename, ' ' ORDER BY tablename) FROM pg_tables
		WHERE schemaname = 'civicgate' AND tablename LIKE 'webhook\_%'`).Scan(&tables); err != nil ||
		tables != "webhook_deliveries webhook_endpoints webhook_fanout webhook_key_canary webhook_notices" {
		t.Fatalf("webhook tables %q: %v", tables, err)
	}
}

func TestUsageAndErrors(t *testing.T) {
	none := func(string) string { return "" }
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{nil, 2, "usage"},
		{[]string{"--help"}, 0, "usage"},
		{[]string{"migrate", "--help"}, 0, "usage"},
		{[]string{"frobnicate"}, 2, "unknown"},
		{[]string{"migrate", "extra"}, 2, "unknown"},
		{[]string{"migrate"}, 1, "DATABASE_URL is not set"},
		{[]string{"rekey", "--help"}, 0, "usage"},
		{[]string{"check-key"}, 1, "CIVIC_WEBHOOK_SECRET_KEY is not set"},
		{[]string{"rekey"}, 1, "CIVIC_WEBHOOK_SECRET_KEY is not set"},
		{[]string{"rekey", "--batch", "0"}, 2, "--batch N"},
		{[]string{"rekey", "extra"}, 2, "--batch N"},
		{[]string{"endpoints"}, 2, "unknown"},
		{[]string{"endpoints", "frobnicate"}, 2, "unknown"},
		{[]string{"endpoints", "list"}, 2, "--org is required"},
		{[]string{"endpoints", "list", "--org"}, 2, "takes --org ORG"},
		{[]string{"endpoints", "delete", "--org", "acme"}, 2, "--id is required"},
		{[]string{"endpoints", "delete", "--org", "acme", "--id", "we_1", "x"}, 2, "takes --org ORG --id ID"},
		{[]string{"endpoints", "list", "--org", "acme"}, 1, "DATABASE_URL is not set"},
	} {
		var out, errOut bytes.Buffer
		if code := Run(context.Background(), tc.args, &out, &errOut, none); code != tc.code || !strings.Contains(errOut.String(), tc.msg) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	secretDSN := "postgres://u:hunter2@127.0.0.1:1/x?connect_timeout=1"
	Run(context.Background(), []string{"migrate"}, &out, &errOut, func(string) string { return secretDSN })
	if strings.Contains(errOut.String(), "hunter2") {
		t.Fatal("the password reached the output")
	}
}
