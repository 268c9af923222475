// Command peersload runs the same GraphQL page — 25 bills, newest first, eight fields — through recordsd and
// PostGraphile in interleaved rounds (recordsd, PostGraphile, recordsd, …), each round a warm-up and then a
// fixed duration of back-to-back requests over a fixed number of keep-alive connections. Per round it reads
// the CPU time (utime+stime, /proc/<pid>/stat) of the server process and of the PostgreSQL backends serving it
// (pg_stat_activity by application_name), and it prints a Markdown table of the medians over the rounds with
// their min–max. Before the rounds it checks that both servers answer the same 25 bills, then loads each for
// --prewarm (node optimises PostGraphile's code only after thousands of requests). Run by
// bench/backend-peers.sh (make bench BENCH=backend-peers).
//
//	peersload --database-url DSN --recordsd URL --recordsd-pid PID --recordsd-app NAME \
//	          --postgraphile URL --postgraphile-pid PID --postgraphile-app NAME [--rounds 5] [--duration 10s]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"reflect"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// The page: the eight fields of docs/api.md's Bill that both schemas name alike. recordsd orders bills by
// introduced_date DESC NULLS LAST, id DESC (docs/design.md D5) through the stored sort_date column; PostGraphile
// orders by the same column, and its condition deletedAt: null is recordsd's "deleted_at IS NULL", so both use
// the index bills_order_idx. Each asks for its own next-page cursor as well.
const (
	fields          = "id congress type number officialTitle introducedDate memberName committeeNames"
	recordsdQuery   = "query Page { bills(input: {limit: 25}) { items { " + fields + " } nextCursor } }"
	postgraphileQry = "query Page { allBills(first: 25, orderBy: [SORT_DATE_DESC, ID_DESC], condition: {deletedAt: null}) { nodes { " +
		fields + " } pageInfo { hasNextPage endCursor } } }"
)

func main() {
	var (
		dsn       = flag.String("database-url", os.Getenv("DATABASE_URL"), "the database both servers read (for pg_stat_activity)")
		rdURL     = flag.String("recordsd", "", "recordsd's /graphql URL")
		rdPID     = flag.Int("recordsd-pid", 0, "recordsd's pid")
		rdApp     = flag.String("recordsd-app", "", "application_name of recordsd's connections")
		pgURL     = flag.String("postgraphile", "", "PostGraphile's /graphql URL")
		pgPID     = flag.Int("postgraphile-pid", 0, "PostGraphile's (node's) pid")
		pgApp     = flag.String("postgraphile-app", "", "application_name of PostGraphile's connections")
		rounds    = flag.Int("rounds", 5, "rounds per server, interleaved")
		duration  = flag.Duration("duration", 10*time.Second, "measured time per round")
		prewarm   = flag.Duration("prewarm", 15*time.Second, "unmeasured load per server once before the first round (JIT, caches)")
		warmup    = flag.Duration("warmup", 2*time.Second, "unmeasured load right before each round (refills connection pools)")
		conns     = flag.Int("conns", 4, "keep-alive connections (one worker each)")
		clkTck    = flag.Int("clk-tck", 100, "clock ticks per second of /proc/<pid>/stat (getconf CLK_TCK)")
		rawRounds = flag.Bool("rounds-table", true, "print every round too")
	)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *dsn == "" || *rdURL == "" || *pgURL == "" || *rdPID == 0 || *pgPID == 0 || *rdApp == "" || *pgApp == "" {
		fail(errors.New("--database-url, --recordsd, --postgraphile and their -pid and -app flags are required"))
	}
	if *rounds < 1 || *conns < 1 || *duration <= 0 || *clkTck < 1 {
		fail(errors.New("--rounds, --conns, --duration and --clk-tck must be positive"))
	}
	servers := []*server{
		newServer("recordsd", *rdURL, *rdPID, *rdApp, body(recordsdQuery), pageItems("bills", "items"), *conns),
		newServer("PostGraphile", *pgURL, *pgPID, *pgApp, body(postgraphileQry), pageItems("allBills", "nodes"), *conns),
	}
	cfg := config{rounds: *rounds, duration: *duration, prewarm: *prewarm, warmup: *warmup, conns: *conns, tick: time.Second / time.Duration(*clkTck)}
	results, err := run(ctx, *dsn, servers, cfg)
	if err != nil {
		fail(err)
	}
	report(os.Stdout, servers, results, *rawRounds)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "peersload:", err)
	os.Exit(1)
}

func body(query string) []byte {
	b, _ := json.Marshal(map[string]string{"query": query}) // a map of strings always marshals
	return b
}

// pageItems returns the decoder of data.<field>.<list>.
func pageItems(field, list string) func([]byte) ([]any, error) {
	return func(b []byte) ([]any, error) {
		var resp struct {
			Data   map[string]map[string]json.RawMessage `json:"data"`
			Errors []any                                 `json:"errors"`
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		if err := d.Decode(&resp); err != nil {
			return nil, fmt.Errorf("decode page: %w", err)
		}
		if len(resp.Errors) > 0 {
			return nil, fmt.Errorf("page has errors: %.300s", b)
		}
		raw, ok := resp.Data[field][list]
		if !ok {
			return nil, fmt.Errorf("page has no data.%s.%s: %.300s", field, list, b)
		}
		var items []any
		d = json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&items); err != nil {
			return nil, fmt.Errorf("decode data.%s.%s: %w", field, list, err)
		}
		return items, nil
	}
}

type config struct {
	rounds                    int
	duration, prewarm, warmup time.Duration
	conns                     int
	tick                      time.Duration // one clock tick of /proc/<pid>/stat
}

// roundResult is one server's measured round.
type roundResult struct {
	server, round int
	pages         int
	elapsed       time.Duration
	p50, p99      time.Duration
	serverCPU     time.Duration
	pgCPU         time.Duration
	backends      int // PostgreSQL backends seen at the round's end
	ended         int // backends that ended during the round (their CPU is not counted)
}

func run(ctx context.Context, dsn string, servers []*server, cfg config) ([]roundResult, error) {
	db, err := connectMonitor(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close(context.Background())
	if err := samePage(ctx, servers); err != nil {
		return nil, err
	}
	// node's JIT needs thousands of requests before its code is optimised (a first round at 2 s of warm-up
	// measured PostGraphile at 2.7× the CPU per page of its later rounds); Go's pools and caches fill too.
	for _, s := range servers {
		if cfg.prewarm > 0 {
			if _, _, err := drive(ctx, s, cfg.conns, cfg.prewarm); err != nil {
				return nil, fmt.Errorf("prewarm: %w", err)
			}
		}
	}
	var results []roundResult
	for r := range cfg.rounds {
		for i, s := range servers {
			if cfg.warmup > 0 {
				if _, _, err := drive(ctx, s, cfg.conns, cfg.warmup); err != nil {
					return nil, fmt.Errorf("warm-up: %w", err)
				}
			}
			before, err := snapshot(ctx, db, s)
			if err != nil {
				return nil, err
			}
			lat, elapsed, err := drive(ctx, s, cfg.conns, cfg.duration)
			if err != nil {
				return nil, err
			}
			after, err := snapshot(ctx, db, s)
			if err != nil {
				return nil, err
			}
			sortDurations(lat)
			pg, ended := backendDelta(before, after)
			res := roundResult{server: i, round: r + 1, pages: len(lat), elapsed: elapsed,
				p50: percentile(lat, 50), p99: percentile(lat, 99),
				serverCPU: time.Duration(after.server-before.server) * cfg.tick, pgCPU: time.Duration(pg) * cfg.tick,
				backends: len(after.backends), ended: ended}
			if res.backends == 0 {
				return nil, fmt.Errorf("%s: no PostgreSQL backend has application_name %q", s.name, s.appName)
			}
			fmt.Fprintf(os.Stderr, "peersload: round %d %s: %d pages, %.0f req/s, server %s, PostgreSQL %s (%d backends)\n",
				r+1, s.name, res.pages, float64(res.pages)/elapsed.Seconds(), res.serverCPU, res.pgCPU, res.backends)
			results = append(results, res)
		}
	}
	return results, nil
}

// connectMonitor opens the one connection that reads pg_stat_activity; its own application_name keeps it out of
// both servers' sets.
func connectMonitor(ctx context.Context, dsn string) (*pgx.Conn, error) {
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("--database-url: %w", err)
	}
	cc.RuntimeParams["application_name"] = "peersload-monitor"
	db, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return db, nil
}

// samePage fails unless every server answers the same 25 items, field for field and in the same order.
func samePage(ctx context.Context, servers []*server) error {
	var first []any
	for i, s := range servers {
		b, status, err := s.fetch(ctx)
		if err != nil {
			return err
		}
		if status != 200 {
			return fmt.Errorf("%s: status %d: %.300s", s.name, status, b)
		}
		items, err := s.items(b)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		if len(items) != 25 {
			return fmt.Errorf("%s: %d items, want 25 (is the database seeded?)", s.name, len(items))
		}
		if i == 0 {
			first = items
		} else if !reflect.DeepEqual(first, items) {
			return fmt.Errorf("%s and %s answer different pages:\n%v\n%v", servers[0].name, s.name, first, items)
		}
	}
	return nil
}
