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

	"github.com/civicgate/civicgate/internal/clirun"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// usageArgs are the flags of `civicgate keys usage`.
type usageArgs struct {
	org, key, by string
	since        time.Duration
	json         bool
}

// runUsage is `civicgate keys usage`: its own flags, the same exit codes as
// the other subcommands (0 ok, 1 failed or unknown organization, 2 usage).
func runUsage(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("keys usage", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // help and flag errors: parseFlags
	var a usageArgs
	fs.StringVar(&a.org, "org", "", "organization name or id")
	fs.StringVar(&a.key, "key", "", "only this key id")
	since := fs.String("since", "24h", "how far back: a Go duration (90m, 24h) or whole days (7d)")
	fs.StringVar(&a.by, "by", "", "minute or hour (default: minute up to 2h, hour beyond)")
	fs.BoolVar(&a.json, "json", false, "print one JSON object")
	if code, done := parseFlags(fs, args, "civicgate keys usage", stderr); done {
		return code
	}
	err := func() error {
		if a.org == "" || fs.NArg() != 0 {
			return fmt.Errorf("%w: usage needs --org and takes no arguments", errUsage)
		}
		d, err := parseSince(*since)
		if err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		a.since = d
		return printUsage(ctx, a, stdout, getenv)
	}()
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage), errors.Is(err, usage.ErrBadQuery):
		fmt.Fprintf(stderr, "civicgate keys usage: %s\n%s", strings.TrimPrefix(err.Error(), "usage: "), usageText)
		return 2
	case errors.Is(err, usage.ErrUnknownOrg):
		fmt.Fprintf(stderr, "civicgate keys usage: no organization %q: neither a name nor an id in the database, and no usage counted for it\n", a.org)
		return 1
	default:
		fmt.Fprintf(stderr, "civicgate keys usage: %s\n", strings.TrimPrefix(err.Error(), "usage: "))
		return 1
	}
}

// parseSince reads a positive Go duration or a whole number of days ("7d").
func parseSince(s string) (time.Duration, error) {
	d, ok := clirun.DaysOrDuration(s, 100*365)
	if !ok {
		return 0, fmt.Errorf("--since %q is not a duration (90m, 24h, 7d)", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("--since %q must be positive", s)
	}
	return d, nil
}

func printUsage(ctx context.Context, a usageArgs, out io.Writer, getenv func(string) string) error {
	q := usage.QueryArgs{Org: a.org, KeyID: a.key, Since: a.since, By: a.by, Now: time.Now()}
	by, err := q.Granularity()
	if err != nil {
		return err // before connecting: a usage error
	}
	q.By = by
	pool, err := openPool(ctx, getenv)
	if err != nil {
		return err
	}
	defer pool.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rows, err := usage.Query(ctx, pool, q)
	if err != nil {
		return err
	}
	if a.json {
		return printUsageJSON(out, a, by, rows)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "START\tKEY\tADMITTED\tREFUSED\t4XX\t5XX\tCOST\tMCP")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", r.Start.UTC().Format(time.RFC3339), r.KeyID,
			r.Admitted, r.Refused, r.ClientErrors, r.ServerErrors, r.Cost, r.MCP)
	}
	t := usage.Sum(rows)
	fmt.Fprintf(tw, "TOTAL\t\t%d\t%d\t%d\t%d\t%d\t%d\n", t.Admitted, t.Refused, t.ClientErrors, t.ServerErrors, t.Cost, t.MCP)
	return tw.Flush()
}

type jsonCounts struct {
	Admitted     int64 `json:"admitted"`
	Refused      int64 `json:"refused"`
	ClientErrors int64 `json:"client_errors"`
	ServerErrors int64 `json:"server_errors"`
	Cost         int64 `json:"cost"`
	// MCP: of these requests, those civic_mcp made for tool calls.
	MCP int64 `json:"mcp_calls"`
}

func countsOf(d usage.Delta) jsonCounts {
	return jsonCounts{d.Admitted, d.Refused, d.ClientErrors, d.ServerErrors, d.Cost, d.MCP}
}

type jsonRow struct {
	Start string `json:"start"`
	KeyID string `json:"key_id"`
	jsonCounts
}

type jsonUsage struct {
	Org    string     `json:"org"`
	Since  string     `json:"since"`
	By     string     `json:"by"`
	Rows   []jsonRow  `json:"rows"`
	Totals jsonCounts `json:"totals"`
}

func printUsageJSON(out io.Writer, a usageArgs, by string, rows []usage.Row) error {
	doc := jsonUsage{Org: a.org, Since: a.since.String(), By: by, Rows: make([]jsonRow, 0, len(rows)), Totals: countsOf(usage.Sum(rows))}
	for _, r := range rows {
		doc.Rows = append(doc.Rows, jsonRow{Start: r.Start.UTC().Format(time.RFC3339), KeyID: r.KeyID, jsonCounts: countsOf(r.Delta)})
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
