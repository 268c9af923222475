package main

import (
	"context"
	"io"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	"github.com/civicgate/civicgate/internal/clirun"
	"github.com/civicgate/civicgate/modules/gqlguard/schemacheck"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// `civicgate schema check`: which recorded operations a candidate schema
// would break, per organization and key (docs/design.md D69). The
// operations come from --operations FILE, or else from the usage tables
// (docs/design.md D70) of the database DATABASE_URL names.

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "schema",
		Usage: "check <candidate.graphqls> [--operations FILE] [--since 30d|RFC3339] [--json]",
		Short: "Lists the recorded operations a candidate GraphQL schema would break, per organization and key",
		Long: `
Validates every operation recorded since --since against a candidate schema,
as graphql_guard would validate it, and lists the operations it would refuse,
with the reasons and the organizations and keys that sent them. Run it before
reloading the gateway with a changed schema. The operations are read from
the usage tables of DATABASE_URL, or from --operations FILE. Exit 0: nothing
would break; 1: something would; 2: bad usage or unreadable input.
`,
		CobraFunc: clirun.Cobra(runSchema),
	})
}

func runSchema(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	return schemacheck.Run(ctx, args, stdout, stderr, time.Now(), recordedOperations{getenv})
}

// recordedOperations reads the operations usage recorded, connecting only
// when asked (a check of an --operations file never does).
type recordedOperations struct{ getenv func(string) string }

// RecordedOperations implements schemacheck.Source.
func (s recordedOperations) RecordedOperations(ctx context.Context, since time.Time) ([]schemacheck.Operation, error) {
	pool, err := clirun.OpenPool(ctx, s.getenv)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	recorded, err := usage.RecordedOperations(ctx, pool, since)
	if err != nil {
		return nil, err
	}
	ops := make([]schemacheck.Operation, 0, len(recorded))
	for _, r := range recorded {
		op := schemacheck.Operation{Hash: r.Hash, Name: r.Name, Type: r.Type, Normalized: r.Normalized}
		for _, k := range r.Keys {
			op.Keys = append(op.Keys, schemacheck.Key{OrgID: k.OrgID, KeyID: k.KeyID, Count: k.Requests, LastSeen: k.LastSeen})
		}
		ops = append(ops, op)
	}
	return ops, nil
}
