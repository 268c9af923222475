package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestUsageDispatch: `usage export` reaches the export's command and the
// other subcommands usagecmd, each refusing a bad argument its own way
// before connecting to a database.
func TestUsageDispatch(t *testing.T) {
	noEnv := func(string) string { return "" }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "--since", "24h", "--format", "xml"}, "civicgate usage export"},
		{[]string{"operations", "--since", "24h"}, "civicgate usage operations"},
	} {
		var stdout, stderr bytes.Buffer
		if code := runUsage(context.Background(), tc.args, &stdout, &stderr, noEnv); code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", tc.args, code, stderr.String())
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: %q, want it from %s", tc.args, stderr.String(), tc.want)
		}
	}
}
