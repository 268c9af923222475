// Package exportcmd is `civicgate usage export`: the hours the metering
// export sends (docs/design.md D73), for a window, as CSV, JSON or the
// CloudEvents batch itself, built by the same code (modules/usageexport/
// export). cmd/civicgate runs it; it registers no Caddy command of its own,
// so it sits beside whatever else answers `civicgate usage …`.
package exportcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/civicgate/civicgate/internal/clirun"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
	"github.com/civicgate/civicgate/modules/usageexport/export"
	"github.com/civicgate/civicgate/modules/usageexport/hours"
)

// UsageText is the command's help.
const UsageText = `usage: civicgate usage export (--since 24h | --from T --to T) [--org ORG] [--format csv|json|cloudevents] [--source URI]
  the closed hours of usage per key (admitted requests, refused, 4xx, 5xx, cost, MCP calls) whose hour
  starts in the window, as the metering export sends them: one event per key and hour, same ids.
  --since      how far back from now: 90m, 24h, 7d (the hour it falls in is included)
  --from, --to the window, RFC 3339 times (--from's hour included, hours starting at or after --to not)
  --org        only this organization (a name or id)
  --format     csv (default; cells that a spreadsheet would run as formulas are prefixed with '),
               json ({"events": [...]}), cloudevents (the batch a sink receives)
  --source     the events' source attribute (cloudevents; default civicgate)
  Hours still open (ended less than 2 minutes ago) are left out. DATABASE_URL as for the other commands.
exit codes: 0 ok, 1 failed or unknown organization, 2 usage
`

// maxHours bounds what one invocation prints (held in memory while read).
const maxHours = 200_000

// settle is how long after its end an hour is printed: the export's default.
const settle = export.DefaultSettle

// Args are the parsed flags.
type Args struct {
	From, To time.Time
	Org      string
	Format   string
	Source   string
}

// Parse reads the flags against now. Refusals wrap clirun.ErrUsage.
func Parse(args []string, now time.Time) (Args, error) {
	fs := flag.NewFlagSet("usage export", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	since := fs.String("since", "", "how far back: 90m, 24h, 7d")
	from := fs.String("from", "", "window start, RFC 3339")
	to := fs.String("to", "", "window end, RFC 3339")
	var a Args
	fs.StringVar(&a.Org, "org", "", "organization name or id")
	fs.StringVar(&a.Format, "format", export.FormatCSV, "csv, json or cloudevents")
	fs.StringVar(&a.Source, "source", export.DefaultSource, "the events' source")
	if err := fs.Parse(args); err != nil {
		return a, fmt.Errorf("%w: %w", clirun.ErrUsage, err)
	}
	if fs.NArg() != 0 {
		return a, clirun.Usage("export takes no arguments, got " + strconv.Quote(fs.Arg(0)))
	}
	switch a.Format {
	case export.FormatCSV, export.FormatJSON, export.FormatCloudEvents:
	default:
		return a, clirun.Usage(fmt.Sprintf("--format %q is not csv, json or cloudevents", a.Format))
	}
	switch {
	case *since != "" && (*from != "" || *to != ""):
		return a, clirun.Usage("give --since or --from and --to, not both")
	case *since != "":
		d, err := parseSince(*since)
		if err != nil {
			return a, err
		}
		a.From, a.To = now.Add(-d), now
	case *from != "" && *to != "":
		var err1, err2 error
		a.From, err1 = time.Parse(time.RFC3339, *from)
		a.To, err2 = time.Parse(time.RFC3339, *to)
		if err := errors.Join(err1, err2); err != nil {
			return a, clirun.Usage("--from and --to are RFC 3339 times (2026-12-01T00:00:00Z)")
		}
		if !a.From.Before(a.To) {
			return a, clirun.Usage("--from must be before --to")
		}
	default:
		return a, clirun.Usage("give --since DURATION, or --from and --to")
	}
	a.From = a.From.UTC().Truncate(time.Hour)
	a.To = a.To.UTC()
	return a, nil
}

// parseSince reads a positive Go duration or a whole number of days ("7d").
func parseSince(s string) (time.Duration, error) {
	d, ok := clirun.DaysOrDuration(s, 3650)
	if !ok || d <= 0 {
		return 0, clirun.Usage(fmt.Sprintf("--since %q is not a positive duration (90m, 24h, 7d)", s))
	}
	return d, nil
}

// Run is `civicgate usage export ARGS…`: it returns the exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	const name = "civicgate usage export"
	if code, done := clirun.Help(args, stderr, UsageText); done {
		return code
	}
	a, err := Parse(args, time.Now())
	if err != nil {
		return clirun.Exit(stderr, name, err, UsageText)
	}
	pool, err := clirun.OpenPool(ctx, getenv)
	if err != nil {
		return clirun.Exit(stderr, name, err, UsageText)
	}
	defer pool.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	err = Print(ctx, stdout, hours.Usage{Pool: pool}, func(ctx context.Context, org string) (string, error) {
		return usage.OrgID(ctx, pool, org)
	}, a, time.Now())
	if errors.Is(err, usage.ErrUnknownOrg) {
		err = fmt.Errorf("no organization %q: neither a name nor an id in the database, and no usage counted for it", a.Org)
	}
	return clirun.Exit(stderr, name, err, UsageText)
}

// Print writes the closed hours of a's window read from src, in a.Format;
// orgID resolves --org.
func Print(ctx context.Context, w io.Writer, src export.Source, orgID func(context.Context, string) (string, error), a Args, now time.Time) error {
	org := ""
	if a.Org != "" {
		var err error
		if org, err = orgID(ctx, a.Org); err != nil {
			return err
		}
	}
	before := a.To
	if closed := export.ClosedBefore(now, settle); closed.Before(before) {
		before = closed
	}
	hs, err := export.Window(ctx, src, a.From, before, org, maxHours)
	if err != nil {
		return err
	}
	return export.WriteEvents(w, a.Format, export.NewEvents(hs, a.Source))
}
