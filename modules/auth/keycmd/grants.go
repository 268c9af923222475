package keycmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/clirun"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// Grants raise one organization's quota and cost budget above its tier until
// a time (docs/design.md D81):
//
//	keys grant ORG [--requests N] [--cost N] --until WHEN
//	keys grant end ORG
//	keys grants list [--all] [--json]
//
// Every change is in the audit log, as the other key commands' are.

// grantArgs are the flags of the grant commands.
type grantArgs struct {
	requests, cost int64
	until          string
	json, all      bool
}

// runGrant is `civicgate keys grant …` and `civicgate keys grants list`:
// its own flags, the exit codes of the other subcommands.
func runGrant(ctx context.Context, sub string, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	name := "civicgate keys " + sub
	fs := flag.NewFlagSet("keys "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var a grantArgs
	fs.Int64Var(&a.requests, "requests", 0, "the request quota per window of the tier's first rate")
	fs.Int64Var(&a.cost, "cost", 0, "the cost budget in points per the tier's budget window")
	fs.StringVar(&a.until, "until", "", "when the grant ends: a duration (720h, 30d) or an RFC 3339 time")
	fs.BoolVar(&a.json, "json", false, "grants list: print JSON")
	fs.BoolVar(&a.all, "all", false, "grants list: ended grants too")
	var positional []string
	for {
		if code, done := parseFlags(fs, args, name, stderr); done {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	err := func() error {
		op, org, err := grantOp(sub, positional, a)
		if err != nil {
			return err
		}
		var g keystore.Grant
		if op == "set" {
			if g, err = a.grant(time.Now()); err != nil {
				return err
			}
		}
		pool, err := openPool(ctx, getenv)
		if err != nil {
			return err
		}
		defer pool.Close()
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		switch op {
		case "list":
			gs, err := keystore.ListGrants(ctx, pool, time.Now(), a.all)
			if err != nil {
				return err
			}
			return printGrants(stdout, gs, a.json, time.Now())
		case "end":
			if err := keystore.EndGrant(ctx, pool, org); err != nil {
				return grantError(err, org)
			}
			fmt.Fprintf(stdout, "Organization %s: grant ended; the tier's figures apply again (gateways apply it within a second)\n", org)
			auditGrant(ctx, pool, org, "org.grant_end", "", getenv)
		case "set":
			g, err := keystore.SetGrant(ctx, pool, org, g)
			if err != nil {
				return grantError(err, org)
			}
			fmt.Fprintf(stdout, "Organization %s: granted %s (gateways apply it within a second; the tier's figures return by themselves at the end)\n",
				org, g.AuditDetail())
			auditGrant(ctx, pool, org, "org.grant", g.AuditDetail(), getenv)
		}
		return nil
	}()
	return clirun.Exit(stderr, name, err, usageText)
}

// grantOp reads what a grant command asks: "set", "end" or "list", and the
// organization.
func grantOp(sub string, args []string, a grantArgs) (op, org string, err error) {
	bad := func(msg string) (string, string, error) { return "", "", fmt.Errorf("%w: %s", errUsage, msg) }
	setFlags := a.requests != 0 || a.cost != 0 || a.until != ""
	switch {
	case sub == "grants":
		if len(args) != 1 || args[0] != "list" || setFlags {
			return bad("grants takes list [--all] [--json]")
		}
		return "list", "", nil
	case a.json || a.all:
		return bad("--json and --all are only for grants list")
	case len(args) == 2 && args[0] == "end":
		if setFlags {
			return bad("grant end ORG takes no flags")
		}
		return "end", args[1], nil
	case len(args) == 1 && args[0] != "":
		if a.until == "" || (a.requests == 0 && a.cost == 0) {
			return bad("grant ORG needs --until and --requests and/or --cost")
		}
		return "set", args[0], nil
	}
	return bad("grant takes ORG [--requests N] [--cost N] --until WHEN, or end ORG")
}

// grant checks the flags into a keystore.Grant at now.
func (a grantArgs) grant(now time.Time) (keystore.Grant, error) {
	until, err := keystore.ParseExpiry(a.until, now)
	if err != nil {
		return keystore.Grant{}, fmt.Errorf("%w: --until: %s", errUsage, strings.ReplaceAll(strings.TrimPrefix(err.Error(), "keystore: "), "expiry", "end"))
	}
	g := keystore.Grant{Requests: a.requests, Cost: a.cost, Until: until}
	if err := g.Check(now); err != nil {
		return keystore.Grant{}, fmt.Errorf("%w: %s", errUsage, strings.TrimPrefix(err.Error(), "keystore: "))
	}
	return g, nil
}

// grantError says a store refusal in the command's words; the organization
// is quoted (%q), so a name with control characters prints escaped.
func grantError(err error, org string) error {
	var deleted *keystore.OrgDeletedError
	switch {
	case errors.Is(err, keystore.ErrNoSuchOrg):
		return fmt.Errorf("no such organization: %q (`civicgate keys list` shows them)", org)
	case errors.Is(err, keystore.ErrNoGrant):
		return fmt.Errorf("organization %q has no grant running; nothing changed", org)
	case errors.As(err, &deleted):
		return fmt.Errorf("organization %q was deleted; it takes no grant", org)
	}
	return err
}

// auditGrant writes a grant change to the audit log (target: the
// organization's name), as the other key commands do (auditChange).
func auditGrant(ctx context.Context, p *pgxpool.Pool, org, action, detail string, getenv func(string) string) {
	e := keystore.AuditEntry{Actor: keystore.CLIActor(getenv), Role: keystore.RoleOperator, Action: action, Target: org, Detail: detail}
	if id, err := keystore.OrgIDByName(ctx, p, org); err == nil {
		e.OrgID = id
	}
	_ = keystore.Audit(ctx, p, e)
}

// printGrants prints the grants as a table or JSON.
func printGrants(out io.Writer, gs []keystore.Grant, asJSON bool, now time.Time) error {
	if asJSON {
		if gs == nil {
			gs = []keystore.Grant{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(gs)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ORG\tORG_ID\tREQUESTS\tCOST\tUNTIL\tSTATE\tGRANTED")
	for _, g := range gs {
		state := "running"
		if !g.Active(now) {
			state = "ended"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Org, g.OrgID, figure(g.Requests), figure(g.Cost), stamp(g.Until), state, stamp(g.CreatedAt))
	}
	return tw.Flush()
}

// figure is n, or "tier" for a figure the grant leaves to the tier.
func figure(n int64) string {
	if n == 0 {
		return "tier"
	}
	return fmt.Sprint(n)
}
