// Package webhookcmd adds `civicgate webhooks` to the civicgate binary:
// migrate (create or upgrade the civic_webhooks tables in DATABASE_URL;
// idempotent, run it at every deploy like `keys migrate`), check-key and
// rekey (the sealing key, docs/design.md D39), and endpoints list|delete.
package webhookcmd

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/clirun"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "webhooks",
		Usage: "migrate | check-key | rekey | endpoints list|delete",
		Short: "Manages the civic_webhooks tables, sealing key and endpoints (database from DATABASE_URL)",
		Long: `
migrate creates or upgrades the webhook endpoint and delivery tables that the
civic_webhooks app and handler use (schema civicgate); idempotent and safe to
run concurrently. check-key and rekey verify and rotate the key material that
seals endpoint secrets (CIVIC_WEBHOOK_SECRET_KEY, and during a rotation
CIVIC_WEBHOOK_PREVIOUS_SECRET_KEY). endpoints list and delete manage an
organization's endpoints. The database is DATABASE_URL. See
civicgate webhooks --help.
`,
		CobraFunc: clirun.Cobra(Run),
	})
}

const usage = `usage: civicgate webhooks <command>
  migrate                                 create or upgrade the civic_webhooks tables
  check-key                               check that CIVIC_WEBHOOK_SECRET_KEY opens this database's key canary
  rekey [--batch N]                       re-seal every endpoint secret and the canary with CIVIC_WEBHOOK_SECRET_KEY
                                          (the new key material); CIVIC_WEBHOOK_PREVIOUS_SECRET_KEY is the old one
  endpoints list --org ORG                an organization's endpoints: id, url, families, state, created
  endpoints delete --org ORG --id ID      delete an endpoint and its deliveries
The database is DATABASE_URL; ORG is an organization name (as in civicgate keys) or id.
Exit codes: 0 done, 1 failed (the message says why), 2 usage.
`

// Run executes one webhooks subcommand and returns the process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if ctx == nil {
		ctx = context.Background()
	}
	if code, done := clirun.Help(args, stderr, usage); done {
		return code
	}
	if slices.Contains(args[1:], "--help") || slices.Contains(args[1:], "-h") {
		fmt.Fprint(stderr, usage)
		return 0
	}
	cmd, rest := args[0], args[1:]
	var err error
	switch {
	case cmd == "migrate" && len(rest) == 0:
		err = withPool(ctx, getenv, func(ctx context.Context, pool *pgxpool.Pool) error {
			if err := store.Migrate(ctx, pool); err != nil {
				return err
			}
			fmt.Fprintln(stdout, "webhook schema is up to date")
			return nil
		})
	case cmd == "check-key" && len(rest) == 0:
		err = checkKey(ctx, getenv, stdout)
	case cmd == "rekey":
		err = rekey(ctx, rest, getenv, stdout)
	case cmd == "endpoints" && len(rest) > 0 && rest[0] == "list":
		err = listEndpoints(ctx, rest[1:], getenv, stdout)
	case cmd == "endpoints" && len(rest) > 0 && rest[0] == "delete":
		err = deleteEndpoint(ctx, rest[1:], getenv, stdout)
	default:
		fmt.Fprintf(stderr, "civicgate webhooks: unknown command or arguments %q\n%s", args, usage)
		return 2
	}
	return clirun.Exit(stderr, "civicgate webhooks "+cmd, err, usage)
}

// withPool runs f on a pool over DATABASE_URL (for 30 s at most).
func withPool(ctx context.Context, getenv func(string) string, f func(context.Context, *pgxpool.Pool) error) error {
	return withPoolFor(ctx, 30*time.Second, getenv, f)
}

// withPoolFor runs f on a pool over DATABASE_URL for at most d.
func withPoolFor(ctx context.Context, d time.Duration, getenv func(string) string, f func(context.Context, *pgxpool.Pool) error) error {
	pool, err := clirun.OpenPool(ctx, getenv)
	if err != nil {
		return err
	}
	defer pool.Close()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return f(ctx, pool)
}
