package main

import (
	"slices"
	"testing"
)

// TestUsageExportArgs: only `usage export …` is answered before Caddy's
// command line; every other `usage` subcommand and command goes on to it.
func TestUsageExportArgs(t *testing.T) {
	if rest, ok := usageExportArgs([]string{"usage", "export", "--since", "24h"}); !ok || !slices.Equal(rest, []string{"--since", "24h"}) {
		t.Errorf("usage export: %v %v", rest, ok)
	}
	if rest, ok := usageExportArgs([]string{"usage", "export"}); !ok || len(rest) != 0 {
		t.Errorf("bare usage export: %v %v", rest, ok)
	}
	for _, args := range [][]string{{"usage"}, {"usage", "operations"}, {"keys", "usage"}, {"export"}, {"run"}, {}} {
		if _, ok := usageExportArgs(args); ok {
			t.Errorf("%v was taken for usage export", args)
		}
	}
}
