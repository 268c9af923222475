// Package keycmd adds `civicgate keys migrate|issue|rotate|revoke|suspend|resume|set-tier|grant|grants|list|delete-org|usage`
// and `civicgate tokens deny|undeny|list` (the access-token deny list, docs/design.md D49)
// to the civicgate binary (docs/design.md D8). The database comes from
// DATABASE_URL; with --file PATH every key command works on a hashed keys
// file instead, with the same rules.
package keycmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/clirun"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "keys",
		Usage: "migrate | issue --org NAME --tier TIER --env ENV [--expires 30d] [--name NAME] [--label k=v]... | rotate --org NAME --env ENV [--tier TIER] [--overlap 24h] | revoke KEY_ID | suspend|resume|delete-org --org NAME | set-tier --org NAME --tier TIER | grant ORG --requests N --cost N --until WHEN | grant end ORG | grants list | list [--org NAME] [--env ENV] [--tier TIER] [--expiring 7d] [--json] | usage --org ORG … ; --file PATH for a keys file; --caddyfile PATH to check the tier",
		Short: "Manages civicgate API keys (database from DATABASE_URL, or a keys file with --file)",
		Long: `
Manages the API keys civic_auth accepts. Keys are printed once, at issue or
rotate, and stored only as SHA-256 hashes. The database is DATABASE_URL; with
--file PATH every key command works on a hashed keys file instead (for
gateways configured with "keys file PATH"), with the same rules. usage prints
the requests counted per key (admitted, refused, 4xx, 5xx, cost, MCP tool
calls) by minute or hour.
`,
		CobraFunc: clirun.Cobra(Run),
	})
}

const usageText = `usage: civicgate keys <command> [flags]
  migrate                                          create or upgrade the key and usage tables
  issue  --org NAME --tier TIER --env live|test [--expires WHEN] [--name NAME] [--label KEY=VALUE]...
                                                   issue a key (creates the organization); --expires: a
                                                   duration (720h, 30d) or an RFC 3339 time
                                                   (2027-01-31T00:00:00Z), after which the key answers 401
                                                   "API key expired"; --name (at most 100 printable characters)
                                                   and --label (repeatable, at most 16; keys [a-z0-9_.-]{1,32},
                                                   values at most 200 printable characters) say whose key it is
  rotate --org NAME --env live|test [--tier TIER] [--overlap 24h]
                                                   issue a new key; the oldest active key stays accepted as
                                                   "rotating" for the overlap (default 24h; 90m, 7d; 0: rotated
                                                   out at once); a key still rotating from an earlier rotate is
                                                   rotated out now; refused with 2 active keys and an overlap;
                                                   the new key keeps the old one's name, labels and expiry
  revoke KEY_ID                                    revoke a key (exit 1 if it already is)
  suspend --org NAME | resume --org NAME           suspend or resume an organization
  set-tier --org NAME --tier TIER                  move every live key of the organization to TIER (database only)
  delete-org --org NAME                            revoke every key of the organization, mark it deleted (kept
                                                   for audit; the name is not reused) and remove its webhook
                                                   endpoints and their deliveries, in one transaction
  list [--org NAME] [--env live|test] [--tier TIER] [--expiring 7d] [--json]
                                                   list keys: ids, prefixes, tier, status, dates, end of overlap,
                                                   expiry, labels, name; never keys or hashes; each filter narrows
                                                   the list; --expiring D keeps the live keys expiring within D
  grant ORG [--requests N] [--cost N] --until WHEN
                                                   raise the organization's quota (N per the window of its tier's
                                                   first rate; other rates grow alike) and/or cost budget (N points
                                                   per the budget's window) without changing its tier, until WHEN
                                                   (a duration: 720h, 30d; or an RFC 3339 time); a grant never
                                                   lowers a figure; the tier's figures return by themselves at the
                                                   end; a new grant replaces the running one (database only)
  grant end ORG                                    end the organization's grant now
  grants list [--all] [--json]                     list the running grants (--all: ended ones too)
  usage --org ORG [--key KEY_ID] [--since 24h] [--by minute|hour] [--json]
                                                   requests per key and minute or hour: admitted, refused (429),
                                                   4xx, 5xx, cost, mcp (admitted requests made for an MCP tool
                                                   call); ORG is a name or id; --since takes 90m, 24h, 7d;
                                                   --by defaults to minute up to 2h, hour beyond (minutes: 48h at most)
  --file PATH (issue, rotate, revoke, suspend, resume, delete-org, list): a hashed keys file instead of
  DATABASE_URL, same rules; gateways reading it pick the change up within about a second.
  --caddyfile PATH (issue, rotate --tier, set-tier; default $CIVICGATE_CADDYFILE): the gateway's Caddyfile (or
  JSON configuration); a tier its civic_auth option does not define is refused (exit 1). Without one the tier
  is not checked and a warning is printed on stderr.
exit codes: 0 ok, 1 refused or failed, 2 usage
`

// opts are the flags of the key commands.
type opts struct {
	org, tier, env, file string
	caddyfile            string // the gateway's Caddyfile, to check the tier (tiers.go)
	overlap              time.Duration
	overlapSet, json     bool
	// issue's lifecycle flags (docs/design.md D71), as given: checked by
	// lifecycle, which makes the keystore.Lifecycle.
	expires, name string
	labels        labelFlags
	nameSet       bool
	// list --expiring, as given ("": no filter)
	expiring string
	// what run made of them
	life           keystore.Lifecycle
	expiringWithin time.Duration
}

// labelFlags collects the repeatable --label.
type labelFlags []string

func (l *labelFlags) String() string     { return strings.Join(*l, " ") }
func (l *labelFlags) Set(v string) error { *l = append(*l, v); return nil }

// Run executes one keys subcommand and returns the process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if ctx == nil {
		ctx = context.Background()
	}
	if code, done := clirun.Help(args, stderr, usageText); done {
		return code
	}
	sub, rest := args[0], args[1:]
	if sub == "usage" {
		return runUsage(ctx, rest, stdout, stderr, getenv)
	}
	if sub == "grant" || sub == "grants" {
		return runGrant(ctx, sub, rest, stdout, stderr, getenv)
	}
	fs := flag.NewFlagSet("keys "+sub, flag.ContinueOnError)
	// The flag package's own usage block is not this command's help: -h,
	// --help and parse errors are answered with usageText, once.
	fs.SetOutput(io.Discard)
	var o opts
	fs.StringVar(&o.org, "org", "", "organization name")
	fs.StringVar(&o.tier, "tier", "", "tier name")
	fs.StringVar(&o.env, "env", "", "environment: live or test")
	fs.StringVar(&o.file, "file", "", "hashed keys file instead of DATABASE_URL")
	fs.StringVar(&o.caddyfile, "caddyfile", "", "the gateway's Caddyfile: issue, rotate and set-tier refuse a tier it does not define (default $"+CaddyfileEnv+")")
	overlap := fs.String("overlap", keystore.DefaultOverlap.String(), "rotate: how long the rotated key stays accepted (0: not at all)")
	fs.BoolVar(&o.json, "json", false, "list: print JSON")
	fs.StringVar(&o.expires, "expires", "", "issue: when the key expires (720h, 30d, or an RFC 3339 time)")
	fs.StringVar(&o.name, "name", "", "issue: the key's name")
	fs.Var(&o.labels, "label", "issue: a label key=value (repeatable)")
	fs.StringVar(&o.expiring, "expiring", "", "list: only the live keys expiring within this duration (7d, 48h)")
	// Flags may come before or after the arguments (revoke KEY_ID --file PATH).
	var positional []string
	for {
		if code, done := parseFlags(fs, rest, "civicgate keys "+sub, stderr); done {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	fs.Visit(func(f *flag.Flag) {
		o.overlapSet = o.overlapSet || f.Name == "overlap"
		o.nameSet = o.nameSet || f.Name == "name"
	})
	err := func() error {
		d, err := parseOverlap(*overlap)
		if err != nil {
			return err
		}
		o.overlap = d
		return run(ctx, sub, positional, o, stdout, stderr, getenv)
	}()
	return clirun.Exit(stderr, "civicgate keys "+sub, plainError(err, sub, positional, o), usageText)
}

// parseFlags parses args with fs (whose output is discarded): --help prints
// usageText on stderr and exits 0, a bad flag its error and usageText, exit 2.
func parseFlags(fs *flag.FlagSet, args []string, name string, stderr io.Writer) (code int, done bool) {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stderr, usageText)
		return 0, true
	case err != nil:
		return clirun.Exit(stderr, name, fmt.Errorf("%w: %w", errUsage, err), usageText), true
	}
	return 0, false
}

// errUsage is a refusal of the command line (exit 2): its messages read "bad usage: …".
var errUsage = clirun.ErrUsage

// parseOverlap reads a Go duration (0 allowed) or whole days ("7d").
func parseOverlap(s string) (time.Duration, error) {
	d, ok := clirun.DaysOrDuration(s, 3650)
	if !ok || d < 0 {
		return 0, fmt.Errorf("%w: --overlap %q is not a duration (0, 90m, 24h, 7d)", errUsage, s)
	}
	return d, nil
}

// target is where a command acts: the keys file, or the database.
type target struct {
	file string
	pool *pgxpool.Pool
}

func run(ctx context.Context, sub string, args []string, o opts, out, stderr io.Writer, getenv func(string) string) error {
	need := func(ok bool, what string) error {
		if !ok {
			return fmt.Errorf("%w: %s", errUsage, what)
		}
		return nil
	}
	var check error
	switch sub {
	case "migrate":
		check = need(len(args) == 0 && o.file == "", "migrate takes no arguments and no --file (a keys file needs no schema)")
	case "issue":
		check = need(o.org != "" && o.tier != "" && o.env != "" && len(args) == 0, "issue needs --org, --tier and --env")
	case "rotate":
		check = need(o.org != "" && o.env != "" && len(args) == 0, "rotate needs --org and --env")
	case "revoke":
		check = need(len(args) == 1, "revoke takes one KEY_ID")
	case "suspend", "resume", "delete-org":
		check = need(o.org != "" && len(args) == 0, sub+" needs --org")
	case "set-tier":
		check = need(o.org != "" && o.tier != "" && len(args) == 0 && o.file == "", "set-tier needs --org and --tier, and works on the database only")
	case "list":
		check = need(len(args) == 0, "list takes only --org, --env, --tier, --json and --file")
		if check == nil && o.env != "" {
			check = need(keystore.ValidEnv(o.env), "--env must be live or test")
		}
	default:
		return need(false, "unknown command "+sub)
	}
	if check != nil {
		return check
	}
	if o.overlapSet && sub != "rotate" {
		return need(false, "--overlap is only for rotate")
	}
	if o.json && sub != "list" {
		return need(false, "--json is only for list (and usage)")
	}
	if (o.expires != "" || o.nameSet || len(o.labels) > 0) && sub != "issue" {
		return need(false, "--expires, --name and --label are only for issue")
	}
	if o.expiring != "" && sub != "list" {
		return need(false, "--expiring is only for list")
	}
	if sub == "issue" {
		life, err := o.lifecycle(time.Now())
		if err != nil {
			return err
		}
		o.life = life
	}
	if o.expiring != "" {
		d, err := parseExpiring(o.expiring)
		if err != nil {
			return err
		}
		o.expiringWithin = d
	}
	if o.caddyfile != "" && sub != "issue" && sub != "rotate" && sub != "set-tier" {
		return need(false, "--caddyfile is only for issue, rotate and set-tier")
	}
	if err := checkTier(sub, o, stderr, getenv); err != nil {
		return err
	}
	t := target{file: o.file}
	if o.file == "" {
		pool, err := openPool(ctx, getenv)
		if err != nil {
			return err
		}
		defer pool.Close()
		t.pool = pool
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	done, err := t.do(ctx, sub, args, o, out)
	if err != nil {
		return err
	}
	if t.pool != nil {
		auditChange(ctx, t.pool, sub, args, o, done, getenv)
	}
	if sub == "revoke" {
		t.warnAfterRevoke(ctx, args[0], stderr)
	}
	return nil
}

// warnAfterRevoke warns when the revocation left only a key rotating out
// (docs/operations.md "Keys"); a failure to list the keys only skips it.
func (t target) warnAfterRevoke(ctx context.Context, id string, stderr io.Writer) {
	var keys []keystore.KeyInfo
	var err error
	if t.file != "" {
		keys, err = keystore.ListFile(t.file, keystore.ListFilter{})
	} else {
		keys, err = keystore.List(ctx, t.pool, keystore.ListFilter{})
	}
	if err == nil {
		warnRotatingOnly(stderr, keys, id)
	}
}

// auditActions are the audit log's names of the changes the key commands
// make: the console writes the same name for the same change
// (modules/console keys.go and orgs.go).
var auditActions = map[string]string{
	"issue": "key.issue", "rotate": "key.rotate", "revoke": "key.revoke",
	"suspend": "org.suspend", "resume": "org.resume", "set-tier": "org.set_tier", "delete-org": "org.delete",
}

// auditChange writes a database change made from the command line to the
// audit log the console shows (`civicgate audit`), as "cli:<OS user>". A
// database whose audit log is not migrated yet keeps no entry; the change is
// done either way.
func auditChange(ctx context.Context, pool *pgxpool.Pool, sub string, args []string, o opts, c change, getenv func(string) string) {
	action, ok := auditActions[sub]
	if !ok {
		return
	}
	e := keystore.AuditEntry{Actor: keystore.CLIActor(getenv), Role: keystore.RoleOperator,
		Action: action, Target: c.target, Detail: c.detail}
	if o.org != "" {
		if org, err := keystore.OrgIDByName(ctx, pool, o.org); err == nil {
			e.OrgID = org
		}
	} else if sub == "revoke" {
		if org, err := keystore.KeyOrg(ctx, pool, args[0]); err == nil {
			e.OrgID = org
		}
	}
	_ = keystore.Audit(ctx, pool, e)
}

// openPool opens DATABASE_URL; without it, it points at --file.
func openPool(ctx context.Context, getenv func(string) string) (*pgxpool.Pool, error) {
	pool, err := clirun.OpenPool(ctx, getenv)
	if errors.Is(err, clirun.ErrNoDatabaseURL) {
		return nil, fmt.Errorf("%w (or use --file PATH for a keys file)", err)
	}
	return pool, err
}

func printIssued(out io.Writer, iss keystore.Issued) {
	fmt.Fprintf(out, "Key ID: %s\nOrganization: %s\nAPI key: %s\n(The key is shown only this once; only its SHA-256 hash is stored.)\n",
		iss.ID, iss.OrgID, iss.Key)
}
