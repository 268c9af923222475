package schemacheck

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/civicgate/civicgate/internal/clirun"
	"github.com/civicgate/civicgate/modules/gqlguard/document"
)

// UsageText is `civicgate schema`'s help.
const UsageText = `usage: civicgate schema check <candidate.graphqls> [--operations FILE] [--since 30d|RFC3339] [--json]
  check   validate every operation recorded since --since (default 30d) against the candidate
          schema, as graphql_guard would, and list per organization and key the operations it
          would refuse and why. --operations FILE: the recorded operations as JSON (an array of
          {hash, name, type, normalized, keys: [{orgId, keyId, count, lastSeen}]}, the usage
          export); without it they are read from the usage tables of the database
          DATABASE_URL names.
          --json: the result as JSON.
  Exit codes: 0 nothing would break, 1 something would, 2 bad usage or unreadable input
  (nothing was checked).
`

// Source reads the operations recorded since a time.
type Source interface {
	RecordedOperations(ctx context.Context, since time.Time) ([]Operation, error)
}

// ErrNoDatabaseSource is the refusal of a check without --operations while
// the gateway's database records no operations to read.
var ErrNoDatabaseSource = errors.New("no database to read the recorded operations from; give --operations FILE")

// Run runs `civicgate schema <args>`; db reads the recorded operations
// when no --operations file is given (nil: none can, ErrNoDatabaseSource).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, now time.Time, db Source) int {
	if code, done := clirun.Help(args, stderr, UsageText); done {
		return code
	}
	if args[0] != "check" {
		return clirun.Exit(stderr, "civicgate schema", clirun.Usage(fmt.Sprintf("unknown command %q", args[0])), UsageText)
	}
	code, err := check(ctx, args[1:], stdout, now, db)
	if err != nil {
		return clirun.Exit(stderr, "civicgate schema check", err, UsageText)
	}
	return code
}

func check(ctx context.Context, args []string, stdout io.Writer, now time.Time, db Source) (int, error) {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	opsFile := fs.String("operations", "", "")
	sinceArg := fs.String("since", "30d", "")
	asJSON := fs.Bool("json", false, "")
	// The candidate may come before or after the flags.
	var positional []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return 2, fmt.Errorf("%w: %v", clirun.ErrUsage, err)
		}
		args = fs.Args()
		if len(args) > 0 {
			positional = append(positional, args[0])
			args = args[1:]
		}
	}
	if len(positional) != 1 {
		return 2, clirun.Usage("want one candidate schema file")
	}
	since, err := parseSince(*sinceArg, now)
	if err != nil {
		return 2, err
	}
	candidate, err := document.LoadSchema(positional[0])
	if err != nil {
		return 2, clirun.Usage(err.Error())
	}
	var ops []Operation
	switch {
	case *opsFile != "":
		if ops, err = readOperations(*opsFile); err != nil {
			return 2, clirun.Usage(err.Error())
		}
	case db == nil:
		return 2, clirun.Usage(ErrNoDatabaseSource.Error())
	default:
		if ops, err = db.RecordedOperations(ctx, since); err != nil {
			return 1, fmt.Errorf("reading recorded operations: %w", err)
		}
	}
	ops = usedSince(ops, since)
	breaks := Check(candidate.AST, ops)
	byKey := ByKey(breaks)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report{Schema: positional[0], Since: since, Checked: len(ops), Breaks: breaks, ByKey: byKey}); err != nil {
			return 1, fmt.Errorf("writing the result: %w", err)
		}
	} else {
		writeText(stdout, positional[0], since, len(ops), breaks, byKey)
	}
	if len(breaks) > 0 {
		return 1, nil
	}
	return 0, nil
}

// report is the --json output.
type report struct {
	Schema  string      `json:"schema"`
	Since   time.Time   `json:"since"`
	Checked int         `json:"checked"`
	Breaks  []Break     `json:"breaks"`
	ByKey   []KeyBreaks `json:"byKey"`
}

func writeText(w io.Writer, schema string, since time.Time, checked int, breaks []Break, byKey []KeyBreaks) {
	if len(breaks) == 0 {
		fmt.Fprintf(w, "%s breaks none of the %d operations used since %s\n", schema, checked, since.UTC().Format(time.RFC3339))
		return
	}
	orgs := map[string]bool{}
	for _, k := range byKey {
		orgs[k.OrgID] = true
	}
	fmt.Fprintf(w, "%s would break %d of the %d operations used since %s, sent by %s of %s\n",
		schema, len(breaks), checked, since.UTC().Format(time.RFC3339), plural(len(byKey), "key"), plural(len(orgs), "organization"))
	org := ""
	for i, k := range byKey {
		if i == 0 || k.OrgID != org {
			org = k.OrgID
			fmt.Fprintf(w, "organization %s\n", org)
		}
		fmt.Fprintf(w, "  key %s\n", k.KeyID)
		for _, op := range k.Operations {
			fmt.Fprintf(w, "    %s %s %s: %d requests, last %s\n", op.Type, cmpName(op.Name), op.Hash, op.Count, op.LastSeen.UTC().Format(time.RFC3339))
			for _, e := range op.Errors {
				fmt.Fprintf(w, "      %s\n", e)
			}
		}
	}
	// Operations no key is recorded for still break.
	for _, b := range breaks {
		if len(b.Operation.Keys) == 0 {
			fmt.Fprintf(w, "no key recorded\n    %s %s %s\n", b.Operation.Type, cmpName(b.Operation.Name), b.Operation.Hash)
			for _, e := range b.Errors {
				fmt.Fprintf(w, "      %s\n", e)
			}
		}
	}
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func cmpName(name string) string {
	if name == "" {
		return "(anonymous)"
	}
	return name
}

// usedSince keeps the keys seen since since, and the operations some key
// sent since (or that record no key at all).
func usedSince(ops []Operation, since time.Time) []Operation {
	out := ops[:0:0]
	for _, op := range ops {
		if len(op.Keys) == 0 {
			out = append(out, op)
			continue
		}
		var keys []Key
		for _, k := range op.Keys {
			if !k.LastSeen.Before(since) {
				keys = append(keys, k)
			}
		}
		if len(keys) > 0 {
			op.Keys = keys
			out = append(out, op)
		}
	}
	return out
}

// parseSince reads --since: a duration back from now (90m, 24h, 30d) or an
// RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, ok := clirun.DaysOrDuration(s, 100*365); ok && d >= 0 {
		return now.Add(-d).UTC().Truncate(time.Second), nil
	}
	return time.Time{}, clirun.Usage(fmt.Sprintf("--since: want a duration (90m, 24h, 30d) or an RFC 3339 time, got %q", s))
}

// maxOperationsFile bounds the --operations file read.
const maxOperationsFile = 256 << 20

// readOperations reads a JSON array of operations from path ("-": stdin).
func readOperations(path string) ([]Operation, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("reading operations: %w", err)
		}
		defer f.Close()
		r = f
	}
	var ops []Operation
	dec := json.NewDecoder(io.LimitReader(r, maxOperationsFile))
	if err := dec.Decode(&ops); err != nil {
		return nil, fmt.Errorf("reading operations %s: want a JSON array of operations: %w", path, err)
	}
	return ops, nil
}
