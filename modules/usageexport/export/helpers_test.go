package export

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// h0 is an hour start the tests count from.
var h0 = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

// migratedPool is a pool on a fresh database holding the usage and export
// tables.
func migratedPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	for _, m := range []func(context.Context, *pgxpool.Pool) error{usage.Migrate, Migrate} {
		if err := m(context.Background(), pool); err != nil {
			t.Fatal(err)
		}
	}
	return pool
}

// writeHours writes one hour row per (key, hour offset from h0).
func writeHours(t *testing.T, pool *pgxpool.Pool, keys []string, hours ...int) {
	t.Helper()
	var rows []usage.Row
	for _, h := range hours {
		for i, k := range keys {
			rows = append(rows, usage.Row{KeyID: k, OrgID: "org_" + k, Start: h0.Add(time.Duration(h) * time.Hour),
				Delta: usage.Delta{Admitted: int64(10*h + i + 1), Cost: 2, MCP: 1}})
		}
	}
	if err := usage.Write(context.Background(), pool, rows); err != nil {
		t.Fatal(err)
	}
}

// receiver is a CloudEvents sink: it parses every batch with the CloudEvents
// SDK, validates each event and remembers it. It answers 503 to its first
// fail requests (after recording what they carried), 200 afterwards; hook,
// when set, runs before the answer.
type receiver struct {
	t                     *testing.T
	mu                    sync.Mutex
	requests              int
	fail                  int
	attempts              [][]event.Event // every batch received, failed ones included
	accepted              [][]event.Event // batches answered 200
	inFlight, maxInFlight int
	hook                  func(n int)
	srv                   *httptest.Server
}

func newReceiver(t *testing.T, fail int) *receiver {
	r := &receiver{t: t, fail: fail}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	evs, err := cehttp.NewEventsFromHTTPRequest(req)
	if err != nil {
		r.t.Errorf("the sink could not read the batch: %v", err)
		http.Error(w, "bad batch", http.StatusBadRequest)
		return
	}
	for _, e := range evs {
		if err := e.Validate(); err != nil {
			r.t.Errorf("event %s does not validate: %v", e.ID(), err)
		}
	}
	r.mu.Lock()
	r.requests++
	n := r.requests
	r.inFlight++
	r.maxInFlight = max(r.maxInFlight, r.inFlight)
	r.attempts = append(r.attempts, evs)
	failing := r.fail > 0
	if failing {
		r.fail--
	}
	hook := r.hook
	r.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	r.mu.Lock()
	r.inFlight--
	if !failing {
		r.accepted = append(r.accepted, evs)
	}
	r.mu.Unlock()
	if failing {
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// acceptedIDs counts each event id the sink accepted.
func (r *receiver) acceptedIDs() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for _, b := range r.accepted {
		for _, e := range b {
			out[e.ID()]++
		}
	}
	return out
}

// usageSource is the production source's read (modules/usageexport/hours,
// which this package cannot import: it imports this one).
type usageSource struct{ pool *pgxpool.Pool }

func (u usageSource) Hours(ctx context.Context, p Page) ([]Hour, error) {
	rows, err := usage.HoursAfter(ctx, u.pool, usage.HoursAfterArgs{AfterStart: p.After.Start, AfterKey: p.After.KeyID,
		Before: p.Before, OrgID: p.OrgID, Limit: p.Limit})
	out := make([]Hour, len(rows))
	for i, r := range rows {
		out[i] = Hour{KeyID: r.KeyID, OrgID: r.OrgID, Start: r.Start, Requests: r.Admitted, Refused: r.Refused,
			ClientErrors: r.ClientErrors, ServerErrors: r.ServerErrors, Cost: r.Cost, MCPCalls: r.MCP}
	}
	return out, err
}

func newExporter(t *testing.T, pool *pgxpool.Pool, sinkURL string, c Config) *Exporter {
	t.Helper()
	c.Pool, c.Source, c.Sink = pool, usageSource{pool}, &Sink{URL: sinkURL, Timeout: 10 * time.Second}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// drain runs e until a run sends nothing and succeeds, at most runs times,
// and returns the errors of the failed runs.
func drain(t *testing.T, e *Exporter, now time.Time, runs int) []error {
	t.Helper()
	var errs []error
	for range runs {
		res, err := e.RunOnce(context.Background(), now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if res.Sent == 0 {
			return errs
		}
	}
	t.Fatalf("not caught up after %d runs", runs)
	return nil
}
