package keycmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	"github.com/civicgate/civicgate/internal/clirun"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// `civicgate tokens deny|undeny|list`: the deny list of access tokens
// (keystore/denials.go, docs/operations.md "Denying tokens"). It lives in
// PostgreSQL only — a keys file has none — so the database is always
// DATABASE_URL.

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "tokens",
		Usage: "deny --sub SUBJECT | --jti ID [--issuer ISS] [--reason TEXT] [--until RFC3339|DURATION] | undeny --sub SUBJECT | --jti ID [--issuer ISS] | list [--all] [--json]",
		Short: "Denies access tokens by subject or token id (database from DATABASE_URL)",
		Long: `
Denies the access tokens civic_auth accepts from an identity provider: every
token of a subject (--sub), or one token (--jti), of one issuer or of any.
Every gateway reloads the list when it changes and closes the open streams of
what it denies. The list lives in PostgreSQL (DATABASE_URL) only: a keys file
holds none.
`,
		CobraFunc: clirun.Cobra(RunTokens),
	})
}

const tokensUsageText = `usage: civicgate tokens <command> [flags]
  deny   --sub SUBJECT | --jti ID [--issuer ISS] [--reason TEXT] [--until RFC3339|DURATION]
                                  deny every token of the subject, or the one token id; gateways refuse it and
                                  close its open streams within about 2 s. --issuer: only the tokens of that
                                  issuer (its iss exactly; default: any issuer). --until: an end (2026-05-01T00:00:00Z,
                                  or 90m, 24h, 7d from now; default: until undenied). Denying again replaces
                                  the reason and end.
  undeny --sub SUBJECT | --jti ID [--issuer ISS]
                                  remove a denial (the same --issuer as it was denied with; exit 1 if none)
  list   [--all] [--json]         the denials in force (--all: the ended ones too)
  The deny list is in PostgreSQL (DATABASE_URL; run civicgate keys migrate first); a keys file (--file) holds
  none. Subjects and token ids are compared exactly, at most 512 bytes, no control characters; the gateway
  refuses every token whose subject or token id breaks these bounds, so each token it admits can be denied.
exit codes: 0 ok, 1 refused or failed, 2 usage
`

// tokenArgs are the flags of `civicgate tokens`.
type tokenArgs struct {
	sub, jti, issuer, reason, until, file string
	all, json                             bool
	set                                   map[string]bool // the flags given
}

// errNoDenyFile answers --file: a keys file holds no deny list.
var errNoDenyFile = clirun.Usage("token deny lists live in PostgreSQL only (DATABASE_URL); a keys file (--file) holds none")

// RunTokens executes one tokens subcommand and returns the process exit code.
func RunTokens(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if ctx == nil {
		ctx = context.Background()
	}
	if code, done := clirun.Help(args, stderr, tokensUsageText); done {
		return code
	}
	sub := args[0]
	fs := flag.NewFlagSet("tokens "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var a tokenArgs
	fs.StringVar(&a.sub, "sub", "", "deny, undeny: the subject (the jwt block's subject_claim, sub by default)")
	fs.StringVar(&a.jti, "jti", "", "deny, undeny: the token id (jti claim)")
	fs.StringVar(&a.issuer, "issuer", "", "deny, undeny: only this issuer's tokens (default: any issuer)")
	fs.StringVar(&a.reason, "reason", "", "deny: why (kept in the list and the audit log)")
	fs.StringVar(&a.until, "until", "", "deny: the end, RFC 3339 or a duration from now (90m, 24h, 7d); default: until undenied")
	fs.StringVar(&a.file, "file", "", "not supported: a keys file holds no deny list")
	fs.BoolVar(&a.all, "all", false, "list: the ended denials too")
	fs.BoolVar(&a.json, "json", false, "list: print JSON")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	a.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { a.set[f.Name] = true })
	err := func() error {
		if fs.NArg() != 0 {
			return fmt.Errorf("%w: tokens %s takes only flags, not %q", errUsage, sub, fs.Arg(0))
		}
		d, err := checkTokenArgs(sub, a, time.Now())
		if err != nil {
			return err
		}
		pool, err := clirun.OpenPool(ctx, getenv)
		if errors.Is(err, clirun.ErrNoDatabaseURL) {
			return fmt.Errorf("%w: token deny lists live in PostgreSQL only (a keys file holds none)", err)
		}
		if err != nil {
			return err
		}
		defer pool.Close()
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		actor := keystore.CLIActor(getenv)
		switch sub {
		case "deny":
			out, err := keystore.DenyToken(ctx, pool, d, actor)
			if err != nil {
				return err
			}
			printDenied(stdout, out)
		case "undeny":
			gone, err := keystore.UndenyToken(ctx, pool, d.Kind, d.Issuer, d.Value, actor)
			if errors.Is(err, keystore.ErrNotDenied) {
				return fmt.Errorf("%s %q%s is not denied; nothing changed (tokens list shows the denials)", d.Kind, d.Value, ofIssuer(d.Issuer))
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "Undenied %s %q%s (denied %s by %s); gateways accept its tokens again within about 2 s\n",
				gone.Kind, gone.Value, ofIssuer(gone.Issuer), stamp(gone.CreatedAt), gone.Actor)
		case "list":
			ds, err := keystore.ListDenials(ctx, pool, keystore.DenialFilter{Expired: a.all})
			if err != nil {
				return err
			}
			if a.json {
				return printDenialsJSON(stdout, ds, time.Now())
			}
			return printDenials(stdout, ds, time.Now())
		}
		return nil
	}()
	return clirun.Exit(stderr, "civicgate tokens "+sub, err, tokensUsageText)
}

// checkTokenArgs refuses a command line the subcommand does not take (exit 2)
// and returns the denial it names (deny, undeny).
func checkTokenArgs(sub string, a tokenArgs, now time.Time) (keystore.Denial, error) {
	only := func(allowed ...string) error {
		for name := range a.set {
			if !strings.Contains(" "+strings.Join(allowed, " ")+" ", " "+name+" ") {
				return fmt.Errorf("%w: tokens %s does not take --%s", errUsage, sub, name)
			}
		}
		return nil
	}
	if a.set["file"] {
		return keystore.Denial{}, errNoDenyFile
	}
	switch sub {
	case "list":
		return keystore.Denial{}, only("all", "json")
	case "deny":
		if err := only("sub", "jti", "issuer", "reason", "until"); err != nil {
			return keystore.Denial{}, err
		}
	case "undeny":
		if err := only("sub", "jti", "issuer"); err != nil {
			return keystore.Denial{}, err
		}
	default:
		return keystore.Denial{}, fmt.Errorf("%w: unknown command %s", errUsage, sub)
	}
	if a.set["sub"] == a.set["jti"] {
		return keystore.Denial{}, fmt.Errorf("%w: tokens %s needs exactly one of --sub and --jti", errUsage, sub)
	}
	d := keystore.Denial{Kind: keystore.DenySub, Value: a.sub, Issuer: a.issuer, Reason: a.reason}
	if a.set["jti"] {
		d.Kind, d.Value = keystore.DenyJTI, a.jti
	}
	if err, ok := errors.AsType[*keystore.BadDenialError](d.Check()); ok {
		return d, fmt.Errorf("%w: --%s %s", errUsage, err.Field, strings.Replace(err.Problem, "are allowed", "fit the deny list", 1))
	}
	if a.set["until"] {
		end, err := parseUntil(a.until, now)
		if err != nil {
			return d, err
		}
		d.ExpiresAt = &end
	}
	return d, nil
}

// parseUntil reads --until: an RFC 3339 time or a positive duration from now
// (a Go duration or whole days, "7d").
func parseUntil(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		if !t.After(now) {
			return time.Time{}, fmt.Errorf("%w: --until %s is not in the future", errUsage, s)
		}
		return t, nil
	}
	bad := fmt.Errorf("%w: --until %q is neither an RFC 3339 time (2026-05-01T00:00:00Z) nor a duration (90m, 24h, 7d)", errUsage, s)
	d, ok := clirun.DaysOrDuration(s, 100*365)
	if !ok {
		return time.Time{}, bad
	}
	if d <= 0 {
		return time.Time{}, fmt.Errorf("%w: --until %s: the duration must be positive", errUsage, s)
	}
	return now.Add(d), nil
}

func ofIssuer(iss string) string {
	if iss == "" {
		return " of any issuer"
	}
	return " of issuer " + strconv.Quote(iss)
}

func until(d keystore.Denial) string {
	if d.ExpiresAt == nil {
		return "until undenied"
	}
	return "until " + stamp(*d.ExpiresAt)
}

func printDenied(out io.Writer, o keystore.DenyOutcome) {
	fmt.Fprintf(out, "Denied %s %q%s %s; gateways refuse its tokens and close their open streams within about 2 s\n",
		o.Kind, o.Value, ofIssuer(o.Issuer), until(o.Denial))
	if r := o.Replaced; r != nil {
		fmt.Fprintf(out, "It replaces the denial of %s by %s (%s, reason %q)\n", stamp(r.CreatedAt), r.Actor, until(*r), r.Reason)
	}
}

// printDenials prints the table of `tokens list`: ISSUER * is any issuer,
// EXPIRES - is until undenied.
func printDenials(out io.Writer, ds []keystore.Denial, now time.Time) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tVALUE\tISSUER\tSTATUS\tEXPIRES\tCREATED\tACTOR\tREASON")
	for _, d := range ds {
		iss, status := d.Issuer, "denied"
		if iss == "" {
			iss = "*"
		}
		if d.Expired(now) {
			status = "ended"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Kind, d.Value, iss, status, stampOr(d.ExpiresAt), stamp(d.CreatedAt), d.Actor, d.Reason)
	}
	return tw.Flush()
}

// listedDenial is one denial of `tokens list --json`.
type listedDenial struct {
	Kind      string     `json:"kind"`
	Value     string     `json:"value"`
	Issuer    string     `json:"issuer"` // "": any issuer
	Reason    string     `json:"reason"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"` // null: until undenied
	Actor     string     `json:"actor"`
	Ended     bool       `json:"ended"`
}

// printDenialsJSON prints {"denials":[…]} (an empty list is []).
func printDenialsJSON(out io.Writer, ds []keystore.Denial, now time.Time) error {
	doc := struct {
		Denials []listedDenial `json:"denials"`
	}{Denials: make([]listedDenial, 0, len(ds))}
	for _, d := range ds {
		l := listedDenial{Kind: d.Kind, Value: d.Value, Issuer: d.Issuer, Reason: d.Reason, CreatedAt: d.CreatedAt.UTC(),
			Actor: d.Actor, Ended: d.Expired(now)}
		if d.ExpiresAt != nil {
			e := d.ExpiresAt.UTC()
			l.ExpiresAt = &e
		}
		doc.Denials = append(doc.Denials, l)
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("encode the list: %w", err)
	}
	return nil
}
