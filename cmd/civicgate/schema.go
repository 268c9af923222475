package main

import (
	"context"
	"io"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	"github.com/civicgate/civicgate/internal/clirun"
	"github.com/civicgate/civicgate/modules/gqlguard/schemacheck"
)

// `civicgate schema check`: which recorded operations a candidate schema
// would break, per organization and key (docs/design.md D69). The
// operations come from --operations FILE; reading them from the usage
// tables lands with those tables (then runSchema passes their Source).

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "schema",
		Usage: "check <candidate.graphqls> [--operations FILE] [--since 30d|RFC3339] [--json]",
		Short: "Lists the recorded operations a candidate GraphQL schema would break, per organization and key",
		Long: `
Validates every operation recorded since --since against a candidate schema,
as graphql_guard would validate it, and lists the operations it would refuse,
with the reasons and the organizations and keys that sent them. Run it before
reloading the gateway with a changed schema. Exit 0: nothing would break;
1: something would; 2: bad usage or unreadable input.
`,
		CobraFunc: clirun.Cobra(runSchema),
	})
}

func runSchema(ctx context.Context, args []string, stdout, stderr io.Writer, _ func(string) string) int {
	return schemacheck.Run(ctx, args, stdout, stderr, time.Now(), nil)
}
