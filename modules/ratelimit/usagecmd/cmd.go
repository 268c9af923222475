package usagecmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/civicgate/civicgate/internal/clirun"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

const usageText = `usage: civicgate usage <command> [flags]
  operations --org ORG [--key KEY_ID] [--since 24h] [--json]
                               per key and operation: name, type, hash, requests, errors (4xx/5xx),
                               cost, p50 and p95 latency (bucket bounds: at most twice the true value), last seen
  fields --org ORG [--key KEY_ID] [--since 24h] [--json]
                               the schema coordinates those operations read, with their requests
  deprecated --org ORG [--since 24h] [--json]
                               the @deprecated coordinates those operations read: reason, requests, keys, operations
  coordinate Type.field [--since 24h] [--json]
                               per organization and key: the requests of operations that read it
  unused --schema FILE [--since 24h] [--json]
                               the coordinates FILE (GraphQL SDL) defines that no operation read
  export --since 24h | --from T --to T [--org ORG] [--format csv|json|cloudevents]
                               per key and closed hour, the metering export's rows (civicgate usage export --help)
  ORG is a name or id; --since takes 90m, 24h, 7d (hours are kept 90 days).
exit codes: 0 ok, 1 failed or unknown organization, 2 usage
`

// Run executes one usage subcommand and returns the process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if ctx == nil {
		ctx = context.Background()
	}
	if code, done := clirun.Help(args, stderr, usageText); done {
		return code
	}
	name := "civicgate usage " + args[0]
	q := Question{Kind: args[0], Now: time.Now()}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&q.Org, "org", "", "organization name or id")
	fs.StringVar(&q.KeyID, "key", "", "only this key id")
	since := fs.String("since", "24h", "how far back: 90m, 24h, 7d")
	schema := fs.String("schema", "", "unused: the schema file (SDL)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	// flags may come before or after the coordinate
	var positional []string
	rest := args[1:]
	for {
		err := fs.Parse(rest)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, usageText)
			return 0
		}
		if err != nil {
			return clirun.Exit(stderr, name, fmt.Errorf("%w: %w", clirun.ErrUsage, err), usageText)
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	err := func() error {
		var err error
		if q.Since, err = ParseSince(*since); err != nil {
			return err
		}
		if err := q.fromCommandLine(positional, *schema); err != nil {
			return err
		}
		if err := q.Check(); err != nil {
			return err // before connecting
		}
		pool, err := clirun.OpenPool(ctx, getenv)
		if err != nil {
			return err
		}
		defer pool.Close()
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		a, err := Answer(ctx, pool, q)
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(a)
		}
		return printTable(stdout, a)
	}()
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrBadQuestion), errors.Is(err, usage.ErrBadQuery), errors.Is(err, clirun.ErrUsage):
		fmt.Fprintf(stderr, "%s: %s\n%s", name, err, usageText)
		return 2
	case errors.Is(err, usage.ErrUnknownOrg):
		fmt.Fprintf(stderr, "%s: no organization %q: neither a name nor an id in the database, and no usage counted for it\n", name, q.Org)
		return 1
	default:
		fmt.Fprintf(stderr, "%s: %s\n", name, strings.TrimPrefix(err.Error(), "usage: "))
		return 1
	}
}

// fromCommandLine fills the coordinate and schema of q from the command
// line, and refuses what its kind does not take.
func (q *Question) fromCommandLine(positional []string, schemaFile string) error {
	switch q.Kind {
	case KindCoordinate:
		if len(positional) != 1 {
			return fmt.Errorf("%w: coordinate takes one Type.field", ErrBadQuestion)
		}
		q.Coordinate = positional[0]
		return nil
	case KindUnused:
		if schemaFile == "" || len(positional) != 0 {
			return fmt.Errorf("%w: unused needs --schema FILE and takes no arguments", ErrBadQuestion)
		}
		sdl, err := os.ReadFile(schemaFile)
		if err != nil {
			return fmt.Errorf("read the schema: %w", err)
		}
		q.Schema, err = SchemaCoordinates(schemaFile, string(sdl))
		return err
	}
	if len(positional) != 0 {
		return fmt.Errorf("%w: %s takes no arguments", ErrBadQuestion, q.Kind)
	}
	return nil
}

// printTable prints an answer as an aligned table.
func printTable(out io.Writer, a any) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	day := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	switch a := a.(type) {
	case OperationsAnswer:
		fmt.Fprintln(tw, "KEY\tTYPE\tNAME\tHASH\tREQUESTS\tERRORS\tCOST\tP50\tP95\tLAST SEEN")
		for _, o := range a.Operations {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", o.KeyID, o.Type, cmpName(o.Name), short(o.Hash),
				o.Requests, o.Errors, o.Cost, o.P50, o.P95, o.LastSeen)
		}
	case FieldsAnswer:
		fmt.Fprintln(tw, "COORDINATE\tREQUESTS\tOPERATIONS\tLAST SEEN")
		for _, f := range a.Fields {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", f.Coordinate, f.Requests, f.Operations, day(f.LastSeen))
		}
	case DeprecatedAnswer:
		fmt.Fprintln(tw, "COORDINATE\tREQUESTS\tKEYS\tOPERATIONS\tLAST SEEN\tREASON")
		for _, d := range a.Deprecated {
			names := make([]string, 0, len(d.Operations))
			for _, o := range d.Operations {
				names = append(names, cmpName(o.Name))
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", d.Coordinate, d.Requests, d.Keys, strings.Join(names, ","), day(d.LastSeen),
				strconv.Quote(d.Reason))
		}
	case CoordinateAnswer:
		fmt.Fprintln(tw, "ORG\tKEY\tREQUESTS\tLAST SEEN")
		for _, u := range a.Users {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", u.OrgID, u.KeyID, u.Requests, day(u.LastSeen))
		}
	case UnusedAnswer:
		fmt.Fprintf(tw, "%d of %d coordinates unused in %s\n", len(a.Unused), a.Schema, a.Since)
		for _, c := range a.Unused {
			fmt.Fprintln(tw, c)
		}
	}
	return tw.Flush()
}

func cmpName(n string) string {
	if n == "" {
		return "(anonymous)"
	}
	return n
}

// short is a document hash's first 12 characters (the JSON has it whole).
func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
