// Package bench holds the in-process half of the side-by-side benchmark
// (docs/performance.md): the allocations and CPU the civic handlers add to
// one request inside a provisioned Caddy server. The load-generator half is
// bench/side-by-side.sh and bench/cmd/loadgen; bench/run.sh runs both
// (make bench).
package bench

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
	"github.com/jackc/pgx/v5/pgxpool"

	_ "github.com/civicgate/civicgate/modules/auth"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	_ "github.com/civicgate/civicgate/modules/gqlguard"
	_ "github.com/civicgate/civicgate/modules/ratelimit"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// chainBody is a typical client request: variables, an operation name and
// two families, so decode, coercion, cost and entitlements all run.
var chainBody = []byte(`{"query":"query Q($in: BillsInput) { bills(input: $in) { items { id officialTitle introducedDate } nextCursor } members(input: {limit: 5}) { items { member_id name } } }","variables":{"in":{"limit":10,"congress":118}},"operationName":"Q"}`)

var chainLength = []string{strconv.Itoa(len(chainBody))}

// chain is a provisioned Caddy server (admin off, no listener used) with
// two routes: /bare answers directly; /v1/graphql runs civic_auth →
// civic_rate_limit (Redis, quota never reached) → graphql_guard → the same
// answer. The difference between the two is what the gateway adds.
type chain struct {
	srv *caddyhttp.Server
	key string
}

// startChain loads the chain. shipped adds what the shipped /v1/graphql
// route adds (docs/design.md D27, D28): the tier's cost budget spent by the
// guard (`cost {civic.cost_budget}`, a budget never reached) and usage
// counted per key (flushed to a PostgreSQL database of the test's own);
// usageLines are added to its usage block (`operations off`).
func startChain(tb testing.TB, shipped bool, usageLines ...string) *chain {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	keysFile := filepath.Join(tb.TempDir(), "keys.json")
	iss, err := keystore.IssueToFile(keysFile, "bench", "bench", "live")
	if err != nil {
		tb.Fatal(err)
	}
	_, prefix := testenv.Redis(tb)
	tierCost, usageBlock, handlerCost := "", "", ""
	if shipped {
		dsn := testenv.Postgres(tb)
		pool, err := pgxpool.New(context.Background(), dsn)
		if err != nil {
			tb.Fatal(err)
		}
		err = usage.Migrate(context.Background(), pool)
		pool.Close()
		if err != nil {
			tb.Fatal(err)
		}
		tierCost = " cost 1000000000/h"
		usageBlock = fmt.Sprintf("\n\t\tusage {\n\t\t\tpostgres %q%s\n\t\t}", dsn, strings.Join(append([]string{""}, usageLines...), "\n\t\t\t"))
		handlerCost = " {\n\t\t\tcost {civic.cost_budget}\n\t\t}"
	}
	caddyfile := fmt.Sprintf(`{
	admin off
	auto_https off
	persist_config off
	storage file_system %q
	civic_auth {
		keys file %q
		environment live
		identity_secret %q
		tier bench 1000000000/h%s bills members regulatory_filings federal_budgets lobbying_disclosures changes
	}
	civic_rate_limit {
		redis redis://%s/0
		key_prefix %q
		# a Redis answer later than the 50 ms store timeout (a loaded machine) is decided in
		# memory from the last report (docs/design.md D63), never a 500 that fails the run
		on_store_error local%s
	}
}

http://:%d {
	handle /bare {
		respond `+"`"+`{"data":{}}`+"`"+` 200
	}
	handle /v1/graphql {
		civic_auth
		civic_rate_limit%s
		graphql_guard {
			import %q
		}
		respond `+"`"+`{"data":{}}`+"`"+` 200
	}
}
`, filepath.Join(tb.TempDir(), "storage"), keysFile, testenv.RandomSuffix(40), tierCost, testenv.RedisAddr(), prefix, usageBlock,
		testenv.FreePort(tb), handlerCost, shippedFamilies(tb, root))
	return loadChain(tb, caddyfile, iss.Key)
}

// shippedFamilies is the path of caddyfile/families.caddy — the shipped
// schema and family lines, imported inside graphql_guard as routes.caddy
// imports them (docs/design.md D62) — with its schema placeholder set to the
// records schema of this tree.
func shippedFamilies(tb testing.TB, root string) string {
	tb.Setenv("CIVICGATE_SCHEMA", filepath.Join(root, "backend", "schema", "records.graphqls"))
	return filepath.Join(root, "caddyfile", "families.caddy")
}

// loadChain adapts and loads caddyfile (stopped when the test ends) and
// returns its one server with key as the credential its requests carry.
func loadChain(tb testing.TB, caddyfile, key string) *chain {
	tb.Helper()
	cfg, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), map[string]any{"filename": "Caddyfile"})
	if err != nil {
		tb.Fatalf("adapt: %v (%v)", err, warnings)
	}
	if err := caddy.Load(cfg, true); err != nil {
		tb.Fatalf("load: %v", err)
	}
	tb.Cleanup(func() { _ = caddy.Stop() })
	app, err := caddy.ActiveContext().App("http")
	if err != nil {
		tb.Fatal(err)
	}
	for _, s := range app.(*caddyhttp.App).Servers {
		return &chain{srv: s, key: key}
	}
	tb.Fatal("no server")
	return nil
}

// discard is a ResponseWriter that keeps the status and reuses its header map.
type discard struct {
	h      http.Header
	status int
	n      int
}

func (d *discard) Header() http.Header { return d.h }
func (d *discard) Write(p []byte) (int, error) {
	if d.status == 0 {
		d.status = http.StatusOK
	}
	d.n += len(p)
	return len(p), nil
}
func (d *discard) WriteHeader(s int) {
	if d.status == 0 {
		d.status = s
	}
}

// serve sends one request to path (with the bearer key on the gateway
// route) and returns the status.
func (c *chain) serve(w *discard, path string) int {
	r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(chainBody))
	r.Header["Content-Type"] = []string{"application/json"}
	r.Header["Content-Length"] = chainLength // as net/http's server leaves it
	r.Header["Authorization"] = []string{"Bearer " + c.key}
	clear(w.h)
	w.status, w.n = 0, 0
	c.srv.ServeHTTP(w, r)
	return w.status
}

func (c *chain) warm(tb testing.TB) {
	tb.Helper()
	w := &discard{h: http.Header{}}
	for _, p := range []string{"/bare", "/v1/graphql"} {
		for range 3 { // key cached, lease taken, document compiled
			if s := c.serve(w, p); s != http.StatusOK {
				tb.Fatalf("%s: status %d, headers %v", p, s, w.h)
			}
		}
	}
	if w.h.Get("RateLimit") == "" {
		tb.Fatalf("the gateway route did not rate limit: %v", w.h)
	}
}

// BenchmarkChain: one request through the provisioned server, bare route vs
// gateway route; gateway − bare is the civic handlers' cost (allocs/op and
// B/op are exact, ns/op is as noisy as the machine).
//
//	go test -run '^$' -bench Chain -benchmem -count 5 ./bench/
func BenchmarkChain(b *testing.B) {
	c := startChain(b, false)
	c.warm(b)
	for _, p := range []string{"/bare", "/v1/graphql"} {
		name := "bare"
		if p != "/bare" {
			name = "gateway"
		}
		b.Run(name, func(b *testing.B) {
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				if s := c.serve(w, p); s != http.StatusOK {
					b.Fatalf("status %d", s)
				}
			}
		})
	}
	// The same gateway route with the shipped cost budget and usage counting
	// (a second configuration, loaded after the first): against gateway above,
	// what the cost budget and usage counting (docs/design.md D27, D28) add
	// to a request.
	// gateway_cost_usage counts operations per key too (the default,
	// docs/design.md D70); gateway_cost_minutes does not: their difference
	// is what recording the operation adds.
	for name, lines := range map[string][]string{"gateway_cost_usage": nil, "gateway_cost_minutes": {"operations off"}} {
		b.Run(name, func(b *testing.B) {
			c := startChain(b, true, lines...)
			c.warm(b)
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				if s := c.serve(w, "/v1/graphql"); s != http.StatusOK {
					b.Fatalf("status %d", s)
				}
			}
		})
	}
}

// TestGatewayAddedAllocations pins the allocation budget (docs/performance.md,
// BENCHMARKS.md): the civic handlers add at most 15 allocations to a cached,
// admitted request.
// Allocation counts do not depend on the machine's load.
func TestGatewayAddedAllocations(t *testing.T) {
	c := startChain(t, false)
	c.warm(t)
	w := &discard{h: http.Header{}}
	allocs := func(p string) float64 {
		return testing.AllocsPerRun(200, func() {
			if s := c.serve(w, p); s != http.StatusOK {
				t.Fatalf("%s: status %d", p, s)
			}
		})
	}
	bare, gw := allocs("/bare"), allocs("/v1/graphql")
	t.Logf("allocations per request: bare route %.0f, gateway route %.0f, added %.0f", bare, gw, gw-bare)
	if added := gw - bare; added > 15 {
		t.Errorf("the gateway adds %s allocations per request, want ≤ 15", strconv.FormatFloat(added, 'f', 0, 64))
	}
}

// TestShippedPolicyAddedAllocations pins what the shipped route's cost budget
// and usage counting add to a cached, admitted request (docs/design.md D27,
// D28): the budget's hand-off to the guard (its object, the request's new
// context) and nothing per request for usage.
func TestShippedPolicyAddedAllocations(t *testing.T) {
	measure := func(shipped bool, usageLines ...string) float64 {
		c := startChain(t, shipped, usageLines...)
		c.warm(t)
		w := &discard{h: http.Header{}}
		return testing.AllocsPerRun(200, func() {
			if s := c.serve(w, "/v1/graphql"); s != http.StatusOK {
				t.Fatalf("status %d", s)
			}
		})
	}
	plain := measure(false)
	shipped := measure(true)
	minutes := measure(true, "operations off")
	t.Logf("allocations per request: gateway %.0f, with cost budget and usage %.0f, without operations %.0f", plain, shipped, minutes)
	if added := shipped - plain; added > 3 {
		t.Errorf("the cost budget and usage counting add %.0f allocations per request, want ≤ 3", added)
	}
	if math.Round(shipped) != math.Round(minutes) {
		t.Errorf("counting the operation per key (docs/design.md D70) adds %.0f allocations per request, want 0", shipped-minutes)
	}
}
