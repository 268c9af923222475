package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/backend/store"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/jackc/pgx/v5/pgxpool"
)

// scrape GETs the metrics handler and returns every sample, keyed by its name and labels as exposed
// (`name{label="v",…}`; client_golang sorts the labels by name).
func scrape(t *testing.T, h http.Handler) map[string]float64 {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("scrape: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	samples := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		samples[line[:i]] = v
	}
	return samples
}

// TestMetricsAfterRequests: after real requests against a real PostgreSQL, /metrics counts them by route,
// status class and root field, and reports the pool.
func TestMetricsAfterRequests(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.seedFixtures()
	before := scrape(t, e.api.MetricsHandler())
	if n := before[`recordsd_http_request_duration_seconds_count{code="2xx",route="/graphql"}`]; n != 0 {
		t.Fatalf("graphql count before any request = %v", n)
	}
	if _, ok := before[`recordsd_graphql_field_duration_seconds_count{field="lobbyingDisclosures",outcome="ok"}`]; !ok {
		t.Fatal("a root field of the schema has no series before its first request")
	}

	e.gql(`{ bills { nextCursor } }`, nil)
	e.gql(`{ a: bills { nextCursor } b: members { nextCursor } }`, nil)
	e.gql(`{ bills(input: {limit: 101}) { nextCursor } }`, nil) // BAD_USER_INPUT: a field error
	e.gql(`{ nope }`, nil)                                      // validation: no field runs
	if status, _ := e.getBills(nil); status != 200 {
		t.Fatalf("GET /bills = %d", status)
	}
	if status, _, _ := e.do(http.MethodGet, "/no/such/path", nil, nil); status != 404 {
		t.Fatalf("unknown path = %d", status)
	}

	m := scrape(t, e.api.MetricsHandler())
	for series, want := range map[string]float64{
		`recordsd_http_request_duration_seconds_count{code="2xx",route="/graphql"}`:             4,
		`recordsd_http_request_duration_seconds_count{code="2xx",route="/bills"}`:               1,
		`recordsd_http_request_duration_seconds_count{code="4xx",route="other"}`:                1,
		`recordsd_http_request_duration_seconds_count{code="5xx",route="/graphql"}`:             0,
		`recordsd_graphql_field_duration_seconds_count{field="bills",outcome="ok"}`:             2,
		`recordsd_graphql_field_duration_seconds_count{field="bills",outcome="error"}`:          1,
		`recordsd_graphql_field_duration_seconds_count{field="members",outcome="ok"}`:           1,
		`recordsd_graphql_field_duration_seconds_count{field="regulatoryFilings",outcome="ok"}`: 0,
		`recordsd_db_pool_acquired_conns{pool="primary"}`:                                       0,
	} {
		if got, ok := m[series]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	if m[`recordsd_db_pool_total_conns{pool="primary"}`] < 1 || m[`recordsd_db_pool_acquires_total{pool="primary"}`] < 4 ||
		m[`recordsd_db_pool_max_conns{pool="primary"}`] < 1 {
		t.Errorf("pool: total %v acquires %v max %v", m[`recordsd_db_pool_total_conns{pool="primary"}`],
			m[`recordsd_db_pool_acquires_total{pool="primary"}`], m[`recordsd_db_pool_max_conns{pool="primary"}`])
	}
	if _, ok := m[`recordsd_db_pool_empty_acquire_wait_seconds_total{pool="primary"}`]; !ok {
		t.Error("no pool wait duration series")
	}
	// The durations are real: the sum of the /graphql requests is positive.
	if m[`recordsd_http_request_duration_seconds_sum{code="2xx",route="/graphql"}`] <= 0 {
		t.Error("graphql duration sum is not positive")
	}
	// No label value comes from the client: the unknown path is "other", the unknown field made no series.
	for series := range m {
		if strings.Contains(series, "no/such") || strings.Contains(series, `field="nope"`) {
			t.Errorf("client-chosen label value: %s", series)
		}
	}
	// No replica configured: no replica series.
	for series := range m {
		if strings.HasPrefix(series, "recordsd_db_replica_") || strings.HasPrefix(series, "recordsd_db_reads_on_primary_total") {
			t.Errorf("replica series without replicas: %s", series)
		}
	}
}

// TestMetricsReplicaStates: a configured read replica's state, reads and pool are exported. The "replica" is a
// second pool on the primary itself, which is not a standby: the checker marks it not-standby, and every read
// goes to the primary for want of a usable replica.
func TestMetricsReplicaStates(t *testing.T) {
	dsn := testenv.Postgres(t)
	var reps *store.Replicas
	e := newEnv(t, envOpts{dsn: dsn, storeOpts: func(primary *pgxpool.Pool) []store.Option {
		pool, err := pgxpool.New(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		reps = store.NewReplicas(primary, []store.Replica{{Name: "1 (self)", Pool: pool}}, store.ReplicaOptions{Logger: slogTo(&lockedWriter{})})
		return []store.Option{store.WithReplicas(reps)}
	}})
	e.seedFixtures()
	m := scrape(t, e.api.MetricsHandler())
	if m[`recordsd_db_replica_state{replica="1 (self)",state="unchecked"}`] != 1 || m[`recordsd_db_replica_state{replica="1 (self)",state="not-standby"}`] != 0 {
		t.Errorf("before a check: unchecked %v, not-standby %v", m[`recordsd_db_replica_state{replica="1 (self)",state="unchecked"}`],
			m[`recordsd_db_replica_state{replica="1 (self)",state="not-standby"}`])
	}
	reps.CheckNow(context.Background())
	e.gql(`{ bills { nextCursor } }`, nil)
	e.gql(`{ members { nextCursor } }`, nil)
	m = scrape(t, e.api.MetricsHandler())
	for series, want := range map[string]float64{
		`recordsd_db_replica_state{replica="1 (self)",state="not-standby"}`: 1,
		`recordsd_db_replica_state{replica="1 (self)",state="ok"}`:          0,
		`recordsd_db_replica_state{replica="1 (self)",state="unchecked"}`:   0,
		`recordsd_db_replica_reads_total{replica="1 (self)"}`:               0,
		`recordsd_db_replica_read_errors_total{replica="1 (self)"}`:         0,
		`recordsd_db_reads_on_primary_total{reason="no_usable_replica"}`:    2,
		`recordsd_db_reads_on_primary_total{reason="retried"}`:              0,
	} {
		if got, ok := m[series]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	if _, ok := m[`recordsd_db_pool_total_conns{pool="replica 1 (self)"}`]; !ok {
		t.Error("no pool series for the replica")
	}
	checkDashboardNames(t, m)
}

// checkDashboardNames: every recordsd metric the Grafana dashboard (deploy/grafana/civicgate.json) queries is
// one recordsd exports (a histogram by its _bucket, _sum and _count), so the panels cannot drift from the code.
// e2e/dashboard_test.go checks the gateway's names against a running gateway.
func checkDashboardNames(t *testing.T, samples map[string]float64) {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/grafana/civicgate.json")
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(raw) {
		t.Fatal("deploy/grafana/civicgate.json is not valid JSON")
	}
	exported := map[string]bool{}
	for series := range samples {
		name, _, _ := strings.Cut(series, "{")
		exported[name] = true
	}
	used := regexp.MustCompile(`\brecordsd_[a-z_]+`).FindAllString(string(raw), -1)
	if len(used) < 15 {
		t.Fatalf("the dashboard queries only %d recordsd metrics", len(used))
	}
	for _, name := range used {
		if !exported[name] && !exported[name+"_count"] { // a histogram is also named by its base name

			t.Errorf("the dashboard queries %s, which recordsd does not export", name)
		}
	}
}
