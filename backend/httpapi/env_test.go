package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/civicgate/civicgate/backend/cursor"
	"github.com/civicgate/civicgate/backend/httpapi"
	"github.com/civicgate/civicgate/backend/migrations"
	"github.com/civicgate/civicgate/backend/store"
	"github.com/civicgate/civicgate/internal/telemetry"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/contract"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"
)

var (
	cursorSecret   = []byte("cursor-secret-cursor-secret-0123")
	identitySecret = []byte("identity-secret-identity-secret-")
	// allFamilies is what a paid tier's assertion carries (caddyfile/tiers.caddy).
	allFamilies = []string{"bills", "members", "regulatory_filings", "federal_budgets", "lobbying_disclosures", "changes"}
)

// env is one recordsd instance on a throwaway database.
type env struct {
	t    testing.TB
	pool *pgxpool.Pool
	srv  *httptest.Server
	api  *httpapi.Server
	logs *lockedWriter
}

type envOpts struct {
	dsn          string // default: a fresh database
	queryTimeout time.Duration
	// tracer, when set, traces the API (httpapi.Config.TracerProvider) and its SQL (telemetry.NewQueryTracer).
	tracer trace.TracerProvider
	// storeOpts configure the Store (e.g. store.WithReplicas).
	storeOpts func(pool *pgxpool.Pool) []store.Option
}

func newEnv(t testing.TB, opts envOpts) *env {
	t.Helper()
	ctx := context.Background()
	dsn := opts.dsn
	if dsn == "" {
		dsn = testenv.Postgres(t)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	store.ConfigurePool(cfg)
	if opts.tracer != nil {
		cfg.ConnConfig.Tracer = telemetry.NewQueryTracer(opts.tracer)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := migrations.Apply(ctx, pool); err != nil {
		t.Fatal(err)
	}
	codec, err := cursor.New(cursorSecret)
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedWriter{}
	var storeOpts []store.Option
	if opts.storeOpts != nil {
		storeOpts = opts.storeOpts(pool)
	}
	api, err := httpapi.New(httpapi.Config{
		Store:          store.New(pool, codec, storeOpts...),
		IdentitySecret: identitySecret,
		QueryTimeout:   opts.queryTimeout,
		Logger:         slog.New(slog.NewTextHandler(logs, nil)),
		TracerProvider: opts.tracer,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := newServedAPI(api)
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("recordsd log:\n%s", logs.String())
		}
	})
	return &env{t: t, pool: pool, srv: srv, api: api, logs: logs}
}

// newProxiedEnv is newEnv with fixtures, reaching PostgreSQL through a proxy
// the test can cut or stall.
func newProxiedEnv(t *testing.T) (*env, *testenv.Proxy) {
	t.Helper()
	u, err := url.Parse(testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewProxy(t, u.Host)
	u.Host = proxy.Addr()
	e := newEnv(t, envOpts{dsn: u.String()})
	e.seedFixtures()
	return e, proxy
}

func (e *env) exec(sql string, args ...any) {
	e.t.Helper()
	if _, err := e.pool.Exec(context.Background(), sql, args...); err != nil {
		e.t.Fatalf("exec %q: %v", sql, err)
	}
}

func token(t testing.TB) string {
	t.Helper()
	tok, err := contract.SignIdentity(identitySecret, contract.Caller{KeyID: "key1", Org: "org1", Tier: "paid_beta", Env: "test", Families: allFamilies}, time.Now(), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// do sends a request with a valid identity and returns status and body.
func (e *env) do(method, path string, body []byte, hdr map[string]string) (int, []byte, http.Header) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set(contract.IdentityHeader, token(e.t))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

type gqlResponse struct {
	Data   map[string]json.RawMessage `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Path       []any          `json:"path"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

// gql posts a GraphQL request and decodes the 200 response.
func (e *env) gql(query string, vars map[string]any) gqlResponse {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	status, b, _ := e.do(http.MethodPost, "/graphql", body, nil)
	if status != http.StatusOK {
		e.t.Fatalf("POST /graphql = %d %s", status, b)
	}
	var r gqlResponse
	if err := json.Unmarshal(b, &r); err != nil {
		e.t.Fatalf("decode %s: %v", b, err)
	}
	return r
}

type page struct {
	Items      []map[string]any `json:"items"`
	NextCursor *string          `json:"nextCursor"`
}

// list runs a root list field and fails on any error.
func (e *env) list(field, query string, vars map[string]any) page {
	e.t.Helper()
	r := e.gql(query, vars)
	if len(r.Errors) > 0 {
		e.t.Fatalf("%s: errors %+v", field, r.Errors)
	}
	var p page
	if err := json.Unmarshal(r.Data[field], &p); err != nil {
		e.t.Fatalf("decode %s: %v", field, err)
	}
	return p
}

func ids(p page, key string) []string {
	out := make([]string, 0, len(p.Items))
	for _, it := range p.Items {
		out = append(out, it[key].(string))
	}
	return out
}

func (e *env) getBills(params url.Values) (int, []byte) {
	e.t.Helper()
	status, b, _ := e.do(http.MethodGet, "/bills?"+params.Encode(), nil, nil)
	return status, b
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func bg() context.Context { return context.Background() }

func slogTo(w *lockedWriter) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// newServedAPI serves api as recordsd serve does: through ConfigureServer's listener, so every response of a
// test leaves in one write (docs/design.md D59). The reference servers of the differential tests are plain
// httptest servers, so those tests also hold the one-write path to net/http's own bytes and headers.
func newServedAPI(api *httpapi.Server) *httptest.Server {
	srv := httptest.NewUnstartedServer(api.Handler())
	srv.Listener = httpapi.ConfigureServer(srv.Config, srv.Listener)
	srv.Start()
	return srv
}
