// Package webhookcmd adds `civicgate webhooks migrate` to the civicgate
// binary: it creates or upgrades the civic_webhooks tables (schema civicgate)
// in DATABASE_URL. Idempotent; run it at every deploy, like `keys migrate`.
package webhookcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/civicgate/civicgate/modules/webhooks/store"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "webhooks",
		Usage: "migrate",
		Short: "Manages the civic_webhooks tables (database from DATABASE_URL)",
		Long: `
Creates or upgrades the webhook endpoint and delivery tables that the
civic_webhooks app and handler use (schema civicgate). Idempotent and safe to
run concurrently. The database is DATABASE_URL.
`,
		CobraFunc: func(cmd *cobra.Command) {
			cmd.DisableFlagParsing = true
			cmd.RunE = func(c *cobra.Command, args []string) error {
				if code := Run(c.Context(), args, os.Stdout, os.Stderr, os.Getenv); code != 0 {
					os.Exit(code)
				}
				return nil
			}
		},
	})
}

const usage = `usage: civicgate webhooks <command>
  migrate    create or upgrade the civic_webhooks tables (DATABASE_URL)
`

// Run executes one webhooks subcommand and returns the process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if ctx == nil {
		ctx = context.Background()
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] != "migrate" || len(args) > 2 || (len(args) == 2 && args[1] != "--help" && args[1] != "-h") {
		fmt.Fprintf(stderr, "civicgate webhooks: unknown command or arguments %q\n%s", args, usage)
		return 2
	}
	if len(args) == 2 {
		fmt.Fprint(stderr, usage)
		return 0
	}
	if err := migrate(ctx, getenv("DATABASE_URL")); err != nil {
		fmt.Fprintf(stderr, "civicgate webhooks migrate: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "webhook schema is up to date")
	return 0
}

func migrate(ctx context.Context, dsn string) error {
	if dsn == "" {
		return errors.New("DATABASE_URL is not set")
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return errors.New("cannot parse DATABASE_URL") // never echo the DSN: it may hold a password
	}
	defer pool.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return store.Migrate(ctx, pool)
}
