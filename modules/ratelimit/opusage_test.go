package ratelimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// guardLike publishes op as graphql_guard does (on the request value civic_auth
// attached), waits, and answers status.
func guardLike(op *contract.GraphQLOperation, status int, wait time.Duration) caddyhttp.Handler {
	return caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if op != nil {
			_, q := contract.AttachRequest(r)
			q.SetGraphQL(contract.GraphQLRequest{Operation: *op, Variables: []byte(`{"secret":"s3cr3t"}`)})
		}
		time.Sleep(wait)
		w.WriteHeader(status)
		return nil
	})
}

// opUsageHandler is a handler keyed by {civic.key_id} on a limiter whose
// usage counts operations (no database: read by Drain).
func opUsageHandler(t testing.TB) (*Handler, *limiter) {
	l := newLimiter(limiterConfig{mode: modeLocal, maxKeys: 10_000})
	l.usage = &usageSink{meter: usage.NewMeter(0), ops: usage.NewOperationMeter(0, 0)}
	h := &Handler{Key: "{" + contract.CivicKeyID + "}", Rate: "1000/m", Policy: "p", limiter: l,
		logger: zap.NewNop(), policies: &policyCache{share: l.share, maxLease: l.maxLease}}
	h.parseTemplates()
	return h, l
}

// opRequest is a request as civic_auth hands it on: key and organization
// published, the request value attached; mcp marks a tool call's request.
func opRequest(mcp bool) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/v1/graphql", nil)
	repl := caddy.NewReplacer()
	repl.Set(contract.CivicKeyID, "key_ops")
	repl.Set(contract.CivicOrg, "org_ops")
	ctx := context.WithValue(req.Context(), caddy.ReplacerCtxKey, repl)
	var q contract.Request
	if mcp {
		q.SetTransport(contract.TransportMCP)
	}
	return req.WithContext(contract.WithRequest(ctx, q))
}

// TestUsageCountsOperations: each admitted request carrying a published
// operation is counted under its key, hash, type and name, with its HTTP
// error and the time the handler chain took; a tool call's request too; a
// request without an operation (not GraphQL) only in the minute counts. No
// variable reaches the meter.
func TestUsageCountsOperations(t *testing.T) {
	h, l := opUsageHandler(t)
	books := &contract.GraphQLOperation{Type: "query", Name: "Books", DocumentHash: "aaaa"}
	bad := &contract.GraphQLOperation{Type: "mutation", Name: "Bad", DocumentHash: "bbbb"}
	for _, c := range []struct {
		op     *contract.GraphQLOperation
		status int
		wait   time.Duration
		mcp    bool
	}{{books, 200, 20 * time.Millisecond, false}, {books, 200, 0, true}, {bad, 500, 0, false}, {bad, 400, 0, false}, {nil, 200, 0, false}} {
		w := &statusWriter{h: http.Header{}}
		if err := h.ServeHTTP(w, opRequest(c.mcp), guardLike(c.op, c.status, c.wait)); err != nil {
			t.Fatal(err)
		}
	}
	minutes := l.usage.meter.Drain()
	if len(minutes) != 1 || minutes[0].Admitted != 5 {
		t.Fatalf("minute rows %+v", minutes)
	}
	rows, recs := l.usage.ops.Drain()
	if len(rows) != 2 || len(recs) != 2 {
		t.Fatalf("operation rows %+v, records %+v", rows, recs)
	}
	byHash := map[string]usage.OperationRow{}
	for _, r := range rows {
		byHash[r.Hash] = r
	}
	b, m := byHash["aaaa"], byHash["bbbb"]
	if b.KeyID != "key_ops" || b.OrgID != "org_ops" || b.Requests != 2 || b.Errors != 0 || b.Name != "Books" || b.Type != "query" {
		t.Fatalf("Books %+v", b)
	}
	if b.Latency[usage.LatencyBucket(20*time.Millisecond)]+b.Latency[usage.LatencyBucket(40*time.Millisecond)] != 1 {
		t.Fatalf("the 20 ms request is not in the 16–64 ms buckets: %v", b.Latency)
	}
	if m.Requests != 2 || m.Errors != 2 || m.Type != "mutation" {
		t.Fatalf("Bad %+v", m)
	}
}

// TestUsageOperationsOff: with operations off only the minute counts move.
func TestUsageOperationsOff(t *testing.T) {
	h, l := opUsageHandler(t)
	l.usage.ops = nil
	w := &statusWriter{h: http.Header{}}
	op := &contract.GraphQLOperation{Type: "query", DocumentHash: "aaaa"}
	if err := h.ServeHTTP(w, opRequest(false), guardLike(op, 200, 0)); err != nil {
		t.Fatal(err)
	}
	if rows := l.usage.meter.Drain(); len(rows) != 1 || rows[0].Admitted != 1 {
		t.Fatalf("minute rows %+v", rows)
	}
}

// BenchmarkHandlerOperationUsage: the handler with usage counting with and
// without operations, the next handler publishing an operation as the guard
// does: the difference is what counting the operation costs.
func BenchmarkHandlerOperationUsage(b *testing.B) {
	op := &contract.GraphQLOperation{Type: "query", Name: "Books", DocumentHash: "aaaa"}
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "minutes", true: "minutes+operations"}[on], func(b *testing.B) {
			h, l := opUsageHandler(b)
			if !on {
				l.usage.ops = nil
			}
			req := opRequest(false)
			next := guardLike(op, 200, 0)
			w := &statusWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				if err := h.ServeHTTP(w, req, next); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestUsageOperationSettings: operations are counted by default with usage,
// off when asked, with the documented bounds.
func TestUsageOperationSettings(t *testing.T) {
	off := false
	for _, c := range []struct {
		cfg  UsageConfig
		want usageSettings
	}{
		{UsageConfig{Postgres: "postgres://db"}, usageSettings{dsn: "postgres://db", interval: 5 * time.Second, cells: 100_000,
			operations: true, opCells: usage.DefaultMaxOperationCells, opsPerKey: usage.DefaultMaxOperationsPerKey}},
		{UsageConfig{Postgres: "postgres://db", Operations: &off, MaxOperations: 7, MaxOperationsPerKey: 3},
			usageSettings{dsn: "postgres://db", interval: 5 * time.Second, cells: 100_000, opCells: 7, opsPerKey: 3}},
	} {
		a := App{Usage: &c.cfg}
		got, err := a.usageSettings(caddy.NewReplacer())
		if err != nil || got != c.want {
			t.Fatalf("%+v: %+v %v, want %+v", c.cfg, got, err, c.want)
		}
	}
	a := App{Usage: &UsageConfig{Postgres: "postgres://db", MaxOperations: -1}}
	if _, err := a.usageSettings(caddy.NewReplacer()); err == nil {
		t.Fatal("a negative max_operations was accepted")
	}
}
