package main

import (
	"context"
	"io"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	"github.com/civicgate/civicgate/internal/clirun"
	"github.com/civicgate/civicgate/modules/ratelimit/usagecmd"
	_ "github.com/civicgate/civicgate/modules/usageexport" // the civic_usage_export app
	"github.com/civicgate/civicgate/modules/usageexport/exportcmd"
)

// `civicgate usage`: the answers of the usage tables (docs/design.md D70,
// modules/ratelimit/usagecmd) and the metering export's rows (D73,
// modules/usageexport/exportcmd), two modules under one command, joined
// here where both are linked in.

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "usage",
		Usage: "operations|fields --org ORG [--key K] | coordinate Type.field | unused --schema FILE | export --since 24h [--format csv|json|cloudevents] ; [--json]",
		Short: "Which keys ran which GraphQL operations and read which schema fields, and the metering export (database from DATABASE_URL)",
		Long: `
Answers from the operations the gateways counted per key and hour
(civic_rate_limit usage { operations on }): which operations each key of an
organization ran, which schema coordinates they read, who reads a
coordinate, and which coordinates of a schema nobody read; and, with
export, the per-key closed hours the metering export sends. The database is
DATABASE_URL.
`,
		CobraFunc: clirun.Cobra(runUsage),
	})
}

// runUsage sends `usage export` to the export's command and every other
// subcommand to usagecmd.
func runUsage(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) > 0 && args[0] == "export" {
		return exportcmd.Run(ctx, args[1:], stdout, stderr, getenv)
	}
	return usagecmd.Run(ctx, args, stdout, stderr, getenv)
}
