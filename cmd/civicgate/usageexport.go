package main

import (
	"context"
	"os"
	"os/signal"

	_ "github.com/civicgate/civicgate/modules/usageexport" // the civic_usage_export app

	"github.com/civicgate/civicgate/modules/usageexport/exportcmd"
)

// usageExportArgs returns the arguments after `usage export` when args are
// that command. It is answered before Caddy's command line, so `usage
// export` needs no Caddy command of its own and stands beside any other
// `usage` subcommands (docs/design.md D73).
func usageExportArgs(args []string) ([]string, bool) {
	if len(args) >= 2 && args[0] == "usage" && args[1] == "export" {
		return args[2:], true
	}
	return nil, false
}

// runUsageExport runs `civicgate usage export` and returns its exit code.
func runUsageExport(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return exportcmd.Run(ctx, args, os.Stdout, os.Stderr, os.Getenv)
}
