package clirun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

const usage = "usage: civicgate thing <command>\n"

func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		done bool
	}{
		{nil, 2, true},
		{[]string{"help"}, 0, true},
		{[]string{"-h"}, 0, true},
		{[]string{"--help", "migrate"}, 0, true},
		{[]string{"migrate"}, 0, false},
		{[]string{"migrate", "--help"}, 0, false}, // a subcommand's own help is its own
	} {
		var stderr bytes.Buffer
		code, done := Help(tc.args, &stderr, usage)
		if code != tc.code || done != tc.done {
			t.Errorf("%q: code %d done %v, want %d %v", tc.args, code, done, tc.code, tc.done)
		}
		if want := map[bool]string{true: usage}[tc.done]; stderr.String() != want {
			t.Errorf("%q: stderr %q, want %q", tc.args, stderr.String(), want)
		}
	}
}

func TestExit(t *testing.T) {
	for _, tc := range []struct {
		err    error
		code   int
		stderr string
	}{
		{nil, 0, ""},
		{errors.New("no such key"), 1, "civicgate thing revoke: no such key\n"},
		{fmt.Errorf("%w: revoke takes one KEY_ID", ErrUsage), 2, "civicgate thing revoke: bad usage: revoke takes one KEY_ID\n" + usage},
		{Usage("--org is required"), 2, "civicgate thing revoke: --org is required\n" + usage},
		{fmt.Errorf("wrapped: %w", Usage("--id is required")), 2, "civicgate thing revoke: wrapped: --id is required\n" + usage},
	} {
		var stderr bytes.Buffer
		if code := Exit(&stderr, "civicgate thing revoke", tc.err, usage); code != tc.code || stderr.String() != tc.stderr {
			t.Errorf("%v: exit %d %q, want %d %q", tc.err, code, stderr.String(), tc.code, tc.stderr)
		}
	}
}

// TestOpenPool: an unset DATABASE_URL is ErrNoDatabaseURL; one that does not
// parse is refused without its text (it may hold a password). Neither
// connects, so no database is needed.
func TestOpenPool(t *testing.T) {
	ctx := context.Background()
	if _, err := OpenPool(ctx, func(string) string { return "" }); !errors.Is(err, ErrNoDatabaseURL) || err.Error() != "DATABASE_URL is not set" {
		t.Errorf("unset: %v", err)
	}
	secret := "postgres://u:hunter2@127.0.0.1:1/x?sslmode=bogus"
	_, err := OpenPool(ctx, func(k string) string { return map[string]string{"DATABASE_URL": secret}[k] })
	if err == nil || err.Error() != "cannot parse DATABASE_URL" || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("unparsable: %v", err)
	}
	pool, err := OpenPool(ctx, func(k string) string {
		return map[string]string{"DATABASE_URL": "postgres://u@127.0.0.1:1/x"}[k]
	})
	if err != nil {
		t.Fatalf("well-formed: %v", err)
	}
	pool.Close()
}
