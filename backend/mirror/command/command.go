// Package command is `recordsd sync`: flag parsing, choosing the importer for a family/source, progress
// output and the --every loop. cmd/recordsd only opens the database and calls Run.
package command

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/backend/mirror/congressgov"
	"github.com/civicgate/civicgate/backend/mirror/fedreg"
	"github.com/civicgate/civicgate/backend/mirror/fetch"
	"github.com/civicgate/civicgate/backend/mirror/lda"
	"github.com/civicgate/civicgate/backend/mirror/legislators"
	"github.com/civicgate/civicgate/backend/mirror/mts"
	"github.com/civicgate/civicgate/backend/mirror/omb"
	"github.com/civicgate/civicgate/backend/mirror/pager"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"
)

// Usage is the one-line synopsis.
const Usage = `recordsd sync <bills|members|regulatory_filings|federal_budgets|lobbying_disclosures> (--file PATH | --url BASE)
  [--source appropriations|outlays] [--every DURATION] [--full-snapshot] [--on-error stop|skip] [--batch N]
  [--page-size N] [--rate PER_MINUTE] [--from-fy YEAR] [--to-fy YEAR] [--edition YEAR]
  env: DATABASE_URL; CONGRESS_GOV_API_KEY (bills --url); LDA_API_KEY (lobbying_disclosures --url, optional)`

// Config is a parsed command line.
type Config struct {
	Family       mirror.Family
	Source       string // importer: congressgov, legislators, fedreg, omb, mts, lda
	File, URL    string
	Every        time.Duration
	FullSnapshot bool
	OnError      mirror.ErrorPolicy
	Batch        int
	PageSize     int
	RatePerMin   int
	FromFY, ToFY int
	// Edition is the budget year of an OMB release (0 = from the file's columns, omb.OutYears).
	Edition int
	// Client overrides the HTTP client settings (tests); nil = defaults for the source.
	Client *fetch.Client
	// TracerProvider traces each run (mirror.Options.TracerProvider); nil = untraced.
	TracerProvider trace.TracerProvider
}

// Parse reads `<family> flags…`.
func Parse(args []string) (Config, error) {
	var c Config
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return c, errors.New("usage: " + Usage)
	}
	fam := mirror.Family(strings.ReplaceAll(args[0], "-", "_"))
	fs := flag.NewFlagSet("sync", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.File, "file", "", "import a saved upstream file (or, for bills, a directory of API responses)")
	fs.StringVar(&c.URL, "url", "", "page through the upstream HTTP API at this base URL")
	src := fs.String("source", "", "federal_budgets source: appropriations (OMB CSV) or outlays (MTS JSON)")
	fs.DurationVar(&c.Every, "every", 0, "repeat the import at this interval until interrupted")
	fs.BoolVar(&c.FullSnapshot, "full-snapshot", false, "the import is complete: mark records of this family/source it lacks as deleted")
	onErr := fs.String("on-error", "stop", "malformed record: stop (roll back its batch, exit non-zero) or skip (report and continue)")
	fs.IntVar(&c.Batch, "batch", mirror.DefaultBatchSize, "records per transaction for --file imports")
	fs.IntVar(&c.PageSize, "page-size", 0, "records per upstream page for --url (default: the source's maximum)")
	fs.IntVar(&c.RatePerMin, "rate", 0, "upstream requests per minute for --url (default: below the source's published limit)")
	fs.IntVar(&c.FromFY, "from-fy", 0, "appropriations: first fiscal-year column to import")
	fs.IntVar(&c.ToFY, "to-fy", 0, "appropriations: last fiscal-year column to import")
	fs.IntVar(&c.Edition, "edition", 0, "appropriations: budget year of the OMB release (default: its last fiscal-year column minus 4)")
	if err := fs.Parse(args[1:]); err != nil {
		return c, fmt.Errorf("%w\nusage: %s", err, Usage)
	}
	if fs.NArg() != 0 {
		return c, fmt.Errorf("unexpected arguments %q\nusage: %s", fs.Args(), Usage)
	}
	if (c.File == "") == (c.URL == "") {
		return c, errors.New("exactly one of --file or --url is required")
	}
	switch mirror.ErrorPolicy(*onErr) {
	case mirror.OnErrorStop, mirror.OnErrorSkip:
		c.OnError = mirror.ErrorPolicy(*onErr)
	default:
		return c, fmt.Errorf("--on-error must be stop or skip, not %q", *onErr)
	}
	c.Family = fam
	switch fam {
	case mirror.Bills:
		c.Source = congressgov.SourceName
	case mirror.Members:
		c.Source = legislators.SourceName
	case mirror.RegulatoryFilings:
		c.Source = fedreg.SourceName
	case mirror.LobbyingDisclosures:
		c.Source = lda.SourceName
	case mirror.FederalBudgets:
		switch *src {
		case "appropriations", omb.SourceName:
			c.Source = omb.SourceName
		case "outlays", mts.SourceName:
			c.Source = mts.SourceName
		default:
			return c, errors.New("federal_budgets needs --source appropriations (OMB CSV) or --source outlays (MTS JSON)")
		}
	default:
		return c, fmt.Errorf("unknown family %q\nusage: %s", args[0], Usage)
	}
	if *src != "" && fam != mirror.FederalBudgets {
		return c, fmt.Errorf("--source applies to federal_budgets only")
	}
	if c.Every < 0 {
		return c, errors.New("--every must be positive")
	}
	return c, nil
}

// Run executes the command until done (or, with --every, until ctx ends).
func Run(ctx context.Context, pool *pgxpool.Pool, c Config, stderr io.Writer, isTerminal bool) error {
	for {
		err := runOnce(ctx, pool, c, stderr, isTerminal)
		if c.Every <= 0 {
			return err
		}
		if err != nil {
			fmt.Fprintf(stderr, "sync %s: %v (next attempt in %s)\n", c.Family, err, c.Every)
		}
		t := time.NewTimer(c.Every)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

func runOnce(ctx context.Context, pool *pgxpool.Pool, c Config, stderr io.Writer, isTerminal bool) error {
	eng := mirror.New(pool)
	src, total, resumed, err := build(ctx, eng, c)
	if err != nil {
		return err
	}
	p := newProgress(stderr, isTerminal, string(c.Family)+"/"+c.Source, total)
	if resumed {
		fmt.Fprintf(stderr, "sync %s: resuming an interrupted import\n", c.Family)
	}
	st, err := eng.Run(ctx, src, mirror.Options{
		OnError: c.OnError, FullSnapshot: c.FullSnapshot, Resumed: resumed, BaseURL: c.URL,
		TracerProvider: c.TracerProvider,
		Progress:       p.update,
		Report: func(pos string, e error) {
			p.clear()
			fmt.Fprintf(stderr, "sync %s: %s: %v\n", c.Family, pos, e)
		},
		Notice: func(pos, kind, note string) {
			p.clear()
			fmt.Fprintf(stderr, "sync %s: note (%s): %s: %s\n", c.Family, kind, pos, note)
		},
	})
	p.done(st)
	if err != nil {
		return err
	}
	return nil
}

// build returns the source, its record count when known up front (0 = unknown) and whether it resumes.
func build(ctx context.Context, eng *mirror.Engine, c Config) (mirror.Source, int, bool, error) {
	if c.File != "" {
		items, scope, err := readFile(c)
		if err != nil {
			return nil, 0, false, err
		}
		return itemsSource(c, items, scope), records(items), false, nil
	}
	client := c.Client
	if client == nil {
		client = defaultClient(c)
	}
	switch c.Source {
	case legislators.SourceName, omb.SourceName: // single downloadable files
		body, err := client.Get(ctx, c.URL)
		if err != nil {
			return nil, 0, false, err
		}
		items, scope, err := parse(c, bytes.NewReader(body))
		if err != nil {
			return nil, 0, false, err
		}
		return itemsSource(c, items, scope), records(items), false, nil
	}
	cursor, err := eng.LoadCursor(ctx, c.Family, c.Source, c.URL)
	if err != nil {
		return nil, 0, false, err
	}
	resumed := cursor != ""
	var src mirror.Source
	switch c.Source {
	case congressgov.SourceName:
		src, err = congressgov.NewAPI(client, c.URL, cursor, c.PageSize)
	case fedreg.SourceName:
		src, err = pager.New(pager.Source{Fam: c.Family, Src: c.Source, Client: client, BaseURL: c.URL,
			PageParam: "page", SizeParam: "per_page", Size: cmp.Or(max(c.PageSize, 0), 1000), Decode: fedreg.Decode}, cursor)
	case lda.SourceName:
		src, err = pager.New(pager.Source{Fam: c.Family, Src: c.Source, Client: client, BaseURL: c.URL,
			PageParam: "page", SizeParam: "page_size", Size: cmp.Or(max(c.PageSize, 0), 25), Decode: lda.Decode}, cursor)
	case mts.SourceName:
		src, err = pager.New(pager.Source{Fam: c.Family, Src: c.Source, Client: client, BaseURL: c.URL,
			PageParam: "page[number]", SizeParam: "page[size]", Size: cmp.Or(max(c.PageSize, 0), 1000), Decode: mts.NewDecoder().Decode}, cursor)
	default:
		err = fmt.Errorf("no --url importer for %s", c.Source)
	}
	return src, 0, resumed, err
}

func defaultClient(c Config) *fetch.Client {
	cl := &fetch.Client{}
	perMin := 60
	switch c.Source {
	case congressgov.SourceName: // 5,000 requests/hour
		cl.Key, cl.KeyParam, perMin = os.Getenv(congressgov.KeyEnv), "api_key", 80
	case lda.SourceName: // 120 requests/minute with a key
		cl.Key, cl.KeyHeader, cl.KeyPrefix, perMin = os.Getenv(lda.KeyEnv), "Authorization", "Token ", 100
		if cl.Key == "" {
			perMin = 10 // anonymous access is throttled much harder
		}
	}
	if c.RatePerMin > 0 {
		perMin = c.RatePerMin
	}
	cl.Limiter = fetch.PerMinute(perMin)
	return cl
}

func itemsSource(c Config, items []mirror.Item, scope string) *mirror.ItemsSource {
	return &mirror.ItemsSource{Fam: c.Family, Src: c.Source, Items: items, BatchSize: c.Batch, ScopePrefix: scope}
}

// records counts the items that are records (or malformed ones), not notes: the progress bar's total.
func records(items []mirror.Item) int {
	n := 0
	for _, it := range items {
		if it.Rec != nil || it.Err != nil {
			n++
		}
	}
	return n
}

// readFile reads a --file; scope is the record-id prefix a --full-snapshot is limited to ("" = all).
func readFile(c Config) ([]mirror.Item, string, error) {
	if c.Source == congressgov.SourceName {
		items, err := congressgov.ParseFiles(c.File)
		return items, "", err
	}
	f, err := os.Open(c.File)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	return parse(c, f)
}

// parse reads a whole upstream document of the source's format.
func parse(c Config, r io.Reader) ([]mirror.Item, string, error) {
	switch c.Source {
	case legislators.SourceName:
		items, err := legislators.Parse(r, legislators.Options{})
		return items, "", err
	case omb.SourceName:
		// One release is one edition: a full snapshot of it leaves other editions alone.
		items, edition, err := omb.ParseEdition(r, omb.Options{FromYear: c.FromFY, ToYear: c.ToFY, Edition: c.Edition})
		return items, omb.Scope(edition), err
	}
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, "", err
	}
	var p pager.Page
	switch c.Source {
	case fedreg.SourceName:
		p, err = fedreg.Decode(body, 1)
	case lda.SourceName:
		p, err = lda.Decode(body, 1)
	case mts.SourceName:
		p, err = mts.NewDecoder().Decode(body, 1)
	default:
		return nil, "", fmt.Errorf("no file importer for %s", c.Source)
	}
	return p.Items, "", err
}
