// Package consolecmd adds `civicgate console migrate` (the tables the console
// uses), `civicgate console link` (a one-time sign-in link to the
// organization console) and `civicgate audit` (the audit log of every
// change made from the console or the key commands) to the civicgate binary.
// The database comes from DATABASE_URL (docs/operations.md "The organization
// console").
package consolecmd

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/civicgate/civicgate/internal/clirun"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/console/consolestore"
	"github.com/civicgate/civicgate/modules/console/notices"
)

// DefaultConsoleURL is where `make up` serves the console.
const DefaultConsoleURL = "https://localhost:8444"

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "console",
		Usage: "migrate | link --org ORG --email EMAIL [--role admin|viewer|operator] [--url URL]",
		Short: "Creates the console's tables, or prints a one-time sign-in link to the organization console (DATABASE_URL)",
		Long: `
migrate creates or upgrades every table the console uses: the key store's,
the usage tables and the console's own (idempotent; run it at every deploy
that serves the console).

link prints a sign-in link to the organization console for EMAIL in organization
ORG with a role: viewer (reads), admin (keys and webhooks) or operator (every
organization; --org may be omitted). The link works once, for 15 minutes;
only its SHA-256 hash is stored. The console's address is --url, else
CIVICGATE_CONSOLE_URL, else https://localhost:8444.
`,
		CobraFunc: clirun.Cobra(RunConsole),
	})
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "audit",
		Usage: "[--org ORG] [--since 24h] [--limit 100] [--json]",
		Short: "Prints the audit log of console and key changes (DATABASE_URL)",
		Long: `
Prints the audit log, newest first: who (a console member's email,
cli:<user> for the key commands, a key id for the webhook endpoint API), role,
organization, action, target, detail, client address and time. --org narrows to one organization (name or id).
`,
		CobraFunc: clirun.Cobra(RunAudit),
	})
}

// consoleUsageText is the help of `civicgate console`, in the layout of
// `civicgate keys --help`: printed once, on stderr, by --help and after a bad
// command line.
const consoleUsageText = `usage: civicgate console migrate | civicgate console link --org ORG --email EMAIL [--role admin|viewer|operator] [--url URL]
  migrate  create or update the key store's, the usage tables' and the console's tables (docs/operations.md "Migrations")
  link   print a sign-in link to the organization console for EMAIL; it works once, for 15 minutes
         (only its SHA-256 hash is stored)
  --org ORG        the organization's name (may be omitted for an operator)
  --email EMAIL    the member's email
  --role ROLE      viewer (reads), admin (keys and webhooks; the default) or operator (every organization)
  --url URL        the console's https:// address (default $CIVICGATE_CONSOLE_URL, else ` + DefaultConsoleURL + `)
  The database is DATABASE_URL's.
exit codes: 0 ok, 1 refused or failed, 2 usage
`

// RunConsole runs `civicgate console <sub>` and returns the exit code.
func RunConsole(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if code, done := clirun.Help(args, stderr, consoleUsageText); done {
		return code
	}
	if args[0] == "migrate" {
		if len(args) != 1 {
			if code, done := clirun.Help(args[1:], stderr, consoleUsageText); done { // migrate --help
				return code
			}
			fmt.Fprint(stderr, consoleUsageText)
			return 2
		}
		return runMigrate(ctx, stdout, stderr, getenv)
	}
	if args[0] != "link" {
		return clirun.Exit(stderr, "civicgate console", fmt.Errorf("%w: unknown command %s", clirun.ErrUsage, args[0]), consoleUsageText)
	}
	fs := flag.NewFlagSet("console link", flag.ContinueOnError)
	// The flag package's own usage block is not this command's help: parse
	// errors, -h and --help are answered below with consoleUsageText once.
	fs.SetOutput(io.Discard)
	org := fs.String("org", "", "")
	email := fs.String("email", "", "")
	role := fs.String("role", keystore.RoleAdmin, "")
	base := fs.String("url", "", "")
	err := fs.Parse(args[1:])
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stderr, consoleUsageText)
		return 0
	case err != nil:
		return clirun.Exit(stderr, "civicgate console link", fmt.Errorf("%w: %w", clirun.ErrUsage, err), consoleUsageText)
	case fs.NArg() != 0:
		return clirun.Exit(stderr, "civicgate console link", fmt.Errorf("%w: link takes only flags, not %q", clirun.ErrUsage, fs.Arg(0)), consoleUsageText)
	}
	if *email == "" || !keystore.ValidRole(*role) || (*org == "" && *role != keystore.RoleOperator) {
		fmt.Fprintln(stderr, "civicgate console link: needs --email, a role of viewer, admin or operator, and --org unless the role is operator")
		return 2
	}
	u, err := url.Parse(strings.TrimSuffix(cmp.Or(*base, getenv("CIVICGATE_CONSOLE_URL"), DefaultConsoleURL), "/"))
	if err != nil || u.Scheme != "https" || u.Host == "" {
		fmt.Fprintln(stderr, "civicgate console link: --url must be an https:// address")
		return 2
	}
	ctx, cancel := context.WithTimeout(cmp.Or[context.Context](ctx, context.Background()), 30*time.Second)
	defer cancel()
	pool, err := clirun.OpenPool(ctx, getenv)
	if err != nil {
		fmt.Fprintln(stderr, "civicgate console link:", err)
		return 1
	}
	defer pool.Close()
	actor := keystore.CLIActor(getenv)
	l, err := consolestore.CreateLink(ctx, pool, consolestore.LinkSpec{Org: *org, Email: *email, Role: *role, CreatedBy: actor})
	if errors.Is(err, consolestore.ErrNotFound) {
		fmt.Fprintf(stderr, "civicgate console link: no organization named %q\n", *org)
		return 1
	}
	if err != nil {
		fmt.Fprintln(stderr, "civicgate console link:", err)
		return 1
	}
	_ = keystore.Audit(ctx, pool, keystore.AuditEntry{Actor: actor, Role: keystore.RoleOperator, OrgID: l.OrgID,
		Action: "console.link", Target: strings.ToLower(*email), Detail: *role})
	u.Path = "/signin/link"
	u.RawQuery = url.Values{"token": {l.Token}}.Encode()
	fmt.Fprintf(stdout, "%s\n(single use, valid until %s; signs in %s as %s)\n", u, l.ExpiresAt.Format(time.RFC3339), *email, *role)
	return 0
}

// runMigrate runs `civicgate console migrate`: the key store's tables, the
// usage tables and the console's, each owner's in order (docs/design.md D60).
func runMigrate(ctx context.Context, stdout, stderr io.Writer, getenv func(string) string) int {
	ctx, cancel := context.WithTimeout(cmp.Or[context.Context](ctx, context.Background()), 5*time.Minute)
	defer cancel()
	pool, err := clirun.OpenPool(ctx, getenv)
	if err != nil {
		fmt.Fprintln(stderr, "civicgate console migrate:", err)
		return 1
	}
	defer pool.Close()
	if err := consolestore.Migrate(ctx, pool); err != nil {
		fmt.Fprintln(stderr, "civicgate console migrate:", err)
		return 1
	}
	if err := notices.Migrate(ctx, pool); err != nil { // the notice mails (docs/design.md D82)
		fmt.Fprintln(stderr, "civicgate console migrate:", err)
		return 1
	}
	fmt.Fprintln(stdout, "console, key and usage tables are up to date")
	return 0
}

// auditUsageText is the help of `civicgate audit`, in the layout of
// consoleUsageText: printed once, on stderr, by --help and after a bad
// command line.
const auditUsageText = `usage: civicgate audit [--org ORG] [--since 24h] [--limit 100] [--json]
  print the audit log, newest first: who (a console member's email, cli:<user> for the key commands, a key id
  for the webhook endpoint API), role, organization, action, target, detail, client address and time
  --org ORG        one organization (its name or id; default: every one)
  --since D        how far back (a Go duration: 90m, 24h, 168h; default 24h)
  --limit N        at most N entries (1..1000; default 100)
  --json           one JSON object a line
  The database is DATABASE_URL's.
exit codes: 0 ok, 1 refused or failed, 2 usage
`

// RunAudit runs `civicgate audit` and returns the exit code.
func RunAudit(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // auditUsageText is the help, printed once below
	org := fs.String("org", "", "")
	since := fs.Duration("since", 24*time.Hour, "")
	limit := fs.Int("limit", 100, "")
	asJSON := fs.Bool("json", false, "")
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stderr, auditUsageText)
		return 0
	case err != nil:
		return clirun.Exit(stderr, "civicgate audit", fmt.Errorf("%w: %w", clirun.ErrUsage, err), auditUsageText)
	case fs.NArg() != 0 || *since <= 0 || *limit < 1 || *limit > 1000:
		return clirun.Exit(stderr, "civicgate audit", clirun.Usage("takes only --org, --since (positive), --limit (1..1000) and --json"), auditUsageText)
	}
	ctx, cancel := context.WithTimeout(cmp.Or[context.Context](ctx, context.Background()), 30*time.Second)
	defer cancel()
	pool, err := clirun.OpenPool(ctx, getenv)
	if err != nil {
		fmt.Fprintln(stderr, "civicgate audit:", err)
		return 1
	}
	defer pool.Close()
	q := keystore.AuditQuery{Since: time.Now().Add(-*since), Limit: *limit}
	if *org != "" {
		o, err := consolestore.OrgByName(ctx, pool, *org)
		if errors.Is(err, consolestore.ErrNotFound) {
			o, err = consolestore.GetOrg(ctx, pool, *org)
		}
		if err != nil {
			fmt.Fprintf(stderr, "civicgate audit: no organization %q\n", *org)
			return 1
		}
		q.OrgID = o.ID
	}
	entries, _, err := keystore.ListAudit(ctx, pool, q)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "42P01": // undefined_table
		fmt.Fprintln(stderr, "civicgate audit: this database has no audit log yet: run civicgate keys migrate (or civicgate console migrate)")
		return 1
	case err != nil: // the key store's package prefix is not the command's
		fmt.Fprintln(stderr, "civicgate audit:", strings.TrimPrefix(err.Error(), "keystore: "))
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, e := range entries {
			if err := enc.Encode(e); err != nil {
				return 1
			}
		}
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tACTOR\tROLE\tORG\tACTION\tTARGET\tDETAIL\tFROM")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.At.Format(time.RFC3339), e.Actor, e.Role, cmp.Or(e.Org, "-"),
			e.Action, cmp.Or(e.Target, "-"), cmp.Or(e.Detail, "-"), cmp.Or(e.ClientAddr, "-"))
	}
	return boolToCode(tw.Flush() != nil)
}

func boolToCode(failed bool) int {
	if failed {
		return 1
	}
	return 0
}
