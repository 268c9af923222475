// Package keycmd adds `civicgate keys migrate|issue|rotate|revoke|suspend|resume|list|usage`
// to the civicgate binary (docs/design.md D8). The database comes from DATABASE_URL.
package keycmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "keys",
		Usage: "migrate | issue --org NAME --tier TIER --env live|test [--file PATH] | rotate --org NAME --env ENV [--tier TIER] | revoke KEY_ID | suspend --org NAME | resume --org NAME | list [--org NAME] | usage --org ORG [--key KEY_ID] [--since 24h] [--by minute|hour] [--json]",
		Short: "Manages civicgate API keys (database from DATABASE_URL)",
		Long: `
Manages the API keys civic_auth accepts. Keys are printed once, at issue or
rotate, and stored only as SHA-256 hashes. The database is DATABASE_URL.
With --file, issue appends a hashed key to a keys file instead (for gateways
configured with "keys file PATH"). usage prints the requests counted per key
(admitted, refused, 4xx, 5xx, cost) by minute or hour.
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

const usageText = `usage: civicgate keys <command> [flags]
  migrate                                          create or upgrade the key tables
  issue  --org NAME --tier TIER --env live|test    issue a key (creates the organization); --file PATH for a keys file
  rotate --org NAME --env live|test [--tier TIER]  issue a new key and retire the oldest live one
  revoke KEY_ID                                    revoke a key
  suspend --org NAME | resume --org NAME           suspend or resume an organization
  list [--org NAME]                                list keys (ids, prefixes, tier, status, dates; never keys)
  usage --org ORG [--key KEY_ID] [--since 24h] [--by minute|hour] [--json]
                                                   requests per key and minute or hour: admitted, refused (429),
                                                   4xx, 5xx, cost; ORG is a name or id; --since takes 90m, 24h, 7d;
                                                   --by defaults to minute up to 2h, hour beyond (minutes: 48h at most)
`

// Run executes one keys subcommand and returns the process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if ctx == nil {
		ctx = context.Background()
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usageText)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	sub, rest := args[0], args[1:]
	if sub == "usage" {
		return runUsage(ctx, rest, stdout, stderr, getenv)
	}
	fs := flag.NewFlagSet("keys "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	org := fs.String("org", "", "organization name")
	tier := fs.String("tier", "", "tier name")
	env := fs.String("env", "", "environment: live or test")
	file := fs.String("file", "", "hashed keys file (issue only) instead of DATABASE_URL")
	if err := fs.Parse(rest); err != nil {
		return 2
	}
	err := run(ctx, sub, fs.Args(), *org, *tier, *env, *file, stdout, getenv)
	if errors.Is(err, errUsage) {
		fmt.Fprintf(stderr, "civicgate keys %s: %v\n%s", sub, err, usageText)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "civicgate keys %s: %v\n", sub, err)
		return 1
	}
	return 0
}

var errUsage = errors.New("bad usage")

func run(ctx context.Context, sub string, args []string, org, tier, env, file string, out io.Writer, getenv func(string) string) error {
	need := func(ok bool, what string) error {
		if !ok {
			return fmt.Errorf("%w: %s", errUsage, what)
		}
		return nil
	}
	if sub == "issue" && file != "" {
		if err := need(org != "" && tier != "" && env != "" && len(args) == 0, "issue needs --org, --tier and --env"); err != nil {
			return err
		}
		iss, err := keystore.IssueToFile(file, org, tier, env)
		if err != nil {
			return err
		}
		printIssued(out, iss)
		return nil
	}
	if file != "" {
		return need(false, "--file is only supported by issue; edit the keys file's status fields for the rest")
	}
	switch sub {
	case "migrate", "issue", "rotate", "revoke", "suspend", "resume", "list":
	default:
		return need(false, "unknown command "+sub)
	}
	pool, err := openPool(ctx, getenv)
	if err != nil {
		return err
	}
	defer pool.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()

	switch sub {
	case "migrate":
		if err := need(len(args) == 0, "migrate takes no arguments"); err != nil {
			return err
		}
		if err := keystore.Migrate(ctx, pool); err != nil {
			return err
		}
		fmt.Fprintln(out, "key schema is up to date")
	case "issue":
		if err := need(org != "" && tier != "" && env != "" && len(args) == 0, "issue needs --org, --tier and --env"); err != nil {
			return err
		}
		iss, err := keystore.Issue(ctx, pool, org, tier, env)
		if err != nil {
			return err
		}
		printIssued(out, iss)
	case "rotate":
		if err := need(org != "" && env != "" && len(args) == 0, "rotate needs --org and --env"); err != nil {
			return err
		}
		iss, err := keystore.Rotate(ctx, pool, org, tier, env)
		if err != nil {
			return err
		}
		printIssued(out, iss)
		fmt.Fprintf(out, "Rotated out: %s\n", iss.Retired)
	case "revoke":
		if err := need(len(args) == 1, "revoke takes one KEY_ID"); err != nil {
			return err
		}
		if err := keystore.Revoke(ctx, pool, args[0]); err != nil {
			return err
		}
		fmt.Fprintf(out, "Revoked: %s\n", args[0])
	case "suspend", "resume":
		if err := need(org != "" && len(args) == 0, sub+" needs --org"); err != nil {
			return err
		}
		status := keystore.OrgSuspended
		if sub == "resume" {
			status = keystore.OrgActive
		}
		if err := keystore.SetOrgStatus(ctx, pool, org, status); err != nil {
			return err
		}
		fmt.Fprintf(out, "Organization %s: %s\n", org, status)
	case "list":
		if err := need(len(args) == 0, "list takes only --org"); err != nil {
			return err
		}
		keys, err := keystore.List(ctx, pool, org)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tORG\tORG_STATUS\tENV\tTIER\tPREFIX\tSTATUS\tCREATED\tRETIRED")
		for _, k := range keys {
			retired := "-"
			if k.RetiredAt != nil {
				retired = k.RetiredAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s…\t%s\t%s\t%s\n", k.ID, k.Org, k.OrgStatus, k.Env, k.Tier, k.Prefix, k.Status,
				k.CreatedAt.UTC().Format(time.RFC3339), retired)
		}
		return tw.Flush()
	}
	return nil
}

// openPool opens DATABASE_URL.
func openPool(ctx context.Context, getenv func(string) string) (*pgxpool.Pool, error) {
	dsn := getenv("DATABASE_URL")
	if dsn == "" {
		return nil, errors.New("DATABASE_URL is not set")
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, errors.New("cannot parse DATABASE_URL") // never echo the DSN: it may hold a password
	}
	return pool, nil
}

func printIssued(out io.Writer, iss keystore.Issued) {
	fmt.Fprintf(out, "Key ID: %s\nOrganization: %s\nAPI key: %s\n(The key is shown only this once; only its SHA-256 hash is stored.)\n",
		iss.ID, iss.OrgID, iss.Key)
}
