package reliability

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/modules/contract"
)

// Exact bodies of docs/api.md "Errors" that the fault tests expect.
const (
	bodyInternal   = `{"error":"Internal Server Error"}`
	bodyBadGateway = `{"error":"Bad Gateway"}`
	bodyTimeout    = `{"error":"Gateway Timeout"}`
	bodyRateLimit  = `{"error":"Rate limit exceeded"}`
)

// env is one running stack with the keys the tests use.
type env struct {
	s          *stack.Stack
	gw, rd     *stack.Proc
	enterprise string // many orgs' enterprise keys spread load under the per-key rate limit
	keys       []string
	free       string
}

// setup is applied to the stack after Prepare and before any process starts.
type setup func(t *testing.T, s *stack.Stack)

// start brings up a prepared stack (migrated, seeded, keys issued) with
// recordsd and the shipped Caddyfile.local. orgs enterprise keys are issued.
func start(t *testing.T, orgs int, setups ...setup) *env {
	t.Helper()
	s := stack.New(t, &bins)
	s.Prepare()
	e := &env{s: s}
	for i := range orgs {
		k, _ := s.IssueKey(fmt.Sprintf("org%d", i), "enterprise", "live")
		e.keys = append(e.keys, k)
	}
	e.enterprise = e.keys[0]
	e.free, _ = s.IssueKey("freeco", "free", "live")
	for _, f := range setups {
		f(t, s)
	}
	e.rd = s.StartRecordsd()
	e.gw = s.StartGateway("caddyfile/Caddyfile.local")
	return e
}

// call is one request shape of a load mix.
type call struct {
	name   string
	method string
	path   string
	key    string
	ctype  string
	body   string
	// allowed statuses (with the exact body when not "") in normal operation;
	// a 429 with its exact body is always allowed on rate-limited routes.
	want map[int]string
	// valid, when set, checks a 200 body whose want is "".
	valid func(body string) bool
}

var (
	billsQuery = `{"query":"{ bills(input:{limit:3}) { items { id officialTitle } nextCursor } }"}`
	membersQ   = `{"query":"query M($n:Int){ members(input:{limit:$n}) { items { name terms { congress } } nextCursor } }","variables":{"n":2}}`
)

// validCalls are requests that succeed with 200 and data.
func validCalls(key string) []call {
	ok := map[int]string{200: ""}
	return []call{
		{name: "graphql bills", method: "POST", path: "/v1/graphql", key: key, ctype: "application/json", body: billsQuery, want: ok, valid: isGraphQLData},
		{name: "graphql members", method: "POST", path: "/v1/graphql", key: key, ctype: "application/json", body: membersQ, want: ok, valid: isGraphQLData},
		{name: "GET /bills", method: "GET", path: "/bills?limit=2", key: key, want: ok, valid: isBillsPage},
	}
}

// result is what one request got.
type result struct {
	call   *call
	at     time.Time
	dur    time.Duration
	status int // 0: transport error
	body   string
	err    error
	ok     bool // one of the call's expected outcomes (set by hammer)
}

// send sends c once.
func send(ctx context.Context, client *http.Client, base string, c *call) result {
	r := result{call: c, at: time.Now()}
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, base+c.path, body)
	if err != nil {
		r.err = err
		return r
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if c.ctype != "" {
		req.Header.Set("Content-Type", c.ctype)
	}
	resp, err := client.Do(req)
	if err != nil {
		r.err, r.dur = err, time.Since(r.at)
		return r
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	r.status, r.body, r.err, r.dur = resp.StatusCode, string(b), err, time.Since(r.at)
	return r
}

// load is a bounded request loop: workers send the calls round-robin until
// ctx ends (every caller gives ctx a deadline) or stop is called.
type load struct {
	mu      sync.Mutex
	results []result
	cancel  context.CancelFunc
	done    chan struct{}
}

// hammer starts workers sending calls; pace > 0 spaces each worker's requests.
func hammer(ctx context.Context, client *http.Client, base string, workers int, pace time.Duration, calls []call) *load {
	ctx, cancel := context.WithCancel(ctx)
	l := &load{cancel: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ctx.Err() == nil; i++ {
				r := send(ctx, client, base, &calls[i%len(calls)])
				if ctx.Err() != nil && r.err != nil {
					return // cancelled by the end of the loop, not a fault
				}
				if r.ok = expected(r); r.ok {
					r.body = "" // keep memory flat over a long soak
				}
				l.mu.Lock()
				l.results = append(l.results, r)
				l.mu.Unlock()
				if pace > 0 {
					select {
					case <-ctx.Done():
					case <-time.After(pace):
					}
				}
			}
		}()
	}
	go func() { wg.Wait(); close(l.done) }()
	return l
}

// stop ends the loop and returns every result.
func (l *load) stop() []result {
	l.cancel()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.results
}

// count is the number of results so far.
func (l *load) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.results)
}

// expected reports whether r is one of its call's allowed outcomes.
func expected(r result) bool {
	if r.ok {
		return true // checked when received
	}
	if r.status == 0 {
		return false
	}
	if r.status == http.StatusTooManyRequests {
		return r.body == bodyRateLimit
	}
	want, ok := r.call.want[r.status]
	if !ok {
		return false
	}
	if want == "" {
		return r.status != 200 || r.call.valid == nil || r.call.valid(r.body)
	}
	return want == r.body
}

// summary counts results by status (0 for transport errors).
func summary(rs []result) map[int]int {
	m := map[int]int{}
	for _, r := range rs {
		m[r.status]++
	}
	return m
}

// reportUnexpected fails the test for results that match none of allow
// (besides the call's own allowed outcomes), showing the first few.
func reportUnexpected(t *testing.T, what string, rs []result, allow func(result) bool) {
	t.Helper()
	var bad []result
	for _, r := range rs {
		if !expected(r) && (allow == nil || !allow(r)) {
			bad = append(bad, r)
		}
	}
	if len(bad) == 0 {
		return
	}
	var b strings.Builder
	for _, r := range bad[:min(len(bad), 10)] {
		fmt.Fprintf(&b, "\n  %s %s: status %d err %v body %.300s", r.at.Format("15:04:05.000"), r.call.name, r.status, r.err, r.body)
	}
	t.Errorf("%s: %d of %d responses unexpected (by status %v):%s", what, len(bad), len(rs), summary(rs), b.String())
}

// between returns the results sent in [from, to).
func between(rs []result, from, to time.Time) []result {
	var out []result
	for _, r := range rs {
		if !r.at.Before(from) && r.at.Before(to) {
			out = append(out, r)
		}
	}
	return out
}

// rss is a process's resident set size in bytes, from /proc.
func rss(pid int) (int64, error) {
	return procStatus(pid, "VmRSS:")
}

// threads is a process's OS thread count, from /proc.
func threads(pid int) (int64, error) {
	return procStatus(pid, "Threads:")
}

func procStatus(pid int, field string) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("proc status: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), field)
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("proc status %s: %w", field, err)
		}
		if len(fields) > 1 && fields[1] == "kB" {
			n *= 1024
		}
		return n, nil
	}
	return 0, fmt.Errorf("proc status: no %s", field)
}

// goroutines reads the gateway's go_goroutines gauge.
func goroutines(t *testing.T, s *stack.Stack) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := s.GatewayMetric(ctx, "go_goroutines")
	if err != nil {
		t.Fatalf("gateway goroutines: %v", err)
	}
	return v
}

// isGraphQLData reports whether body is a 200 GraphQL answer with data and
// no errors.
func isGraphQLData(body string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(body), &m) != nil {
		return false
	}
	_, hasErr := m["errors"]
	return len(m["data"]) > 0 && !bytes.Equal(m["data"], []byte("null")) && !hasErr
}

// snapshot copies the results so far.
func (l *load) snapshot() []result {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]result(nil), l.results...)
}

// contextWithTimeout is a context for a long loop, cancelled when the test ends.
func contextWithTimeout(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), d)
}

// isBillsPage reports whether body is a GET /bills page with items.
func isBillsPage(body string) bool {
	var p struct {
		Items      []json.RawMessage `json:"items"`
		NextCursor *string           `json:"nextCursor"`
	}
	return json.Unmarshal([]byte(body), &p) == nil && len(p.Items) > 0
}

// recordsdRuntime reads recordsd's GET /debug/runtime (goroutines, heap…),
// with a gateway identity signed by the stack's secret.
func recordsdRuntime(t *testing.T, s *stack.Stack) map[string]float64 {
	t.Helper()
	tok, err := contract.SignIdentity([]byte(s.Getenv("CIVIC_IDENTITY_SECRET")), contract.Caller{KeyID: "key_soak", Org: "soak", Tier: "enterprise", Env: "live", Families: []string{"bills", "members", "regulatory_filings", "federal_budgets", "lobbying_disclosures"}}, time.Now(), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Getenv("RECORDSD_LISTEN")+"/debug/runtime", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(contract.IdentityHeader, tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("recordsd runtime: %v", err)
	}
	defer resp.Body.Close()
	var m map[string]float64
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
		t.Fatalf("recordsd runtime: %d %v", resp.StatusCode, err)
	}
	return m
}
