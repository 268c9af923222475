package delivery_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/webhooks/delivery"
	"github.com/civicgate/civicgate/modules/webhooks/egress"
	"github.com/civicgate/civicgate/modules/webhooks/internal/feedtest"
	"github.com/civicgate/civicgate/modules/webhooks/secretbox"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Now().Truncate(time.Second)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// request is what a receiver saw.
type request struct {
	header http.Header
	body   []byte
	status int
	at     time.Time
}

// receiver is a real HTTP server on loopback whose answers the test controls.
// It can be taken down (listener closed: connection refused) and brought back
// on the same address.
type receiver struct {
	t      *testing.T
	mu     sync.Mutex
	reqs   []request
	answer func(r *http.Request, n int) (int, http.Header) // n = requests so far for this webhook-id
	addr   string
	srv    *http.Server
	hold   chan struct{} // non-nil: requests wait for it to close
	inside int
	peak   int
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{t: t, answer: func(*http.Request, int) (int, http.Header) { return http.StatusNoContent, nil }}
	rc.up("127.0.0.1:0")
	t.Cleanup(func() {
		// Close, not Shutdown: a connection the client dialled but never used
		// would hold a graceful shutdown for 5 s.
		if rc.srv != nil {
			_ = rc.srv.Close()
		}
	})
	return rc
}

func (rc *receiver) URL() string { return "http://" + rc.addr + "/hook" }

func (rc *receiver) up(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		rc.t.Fatal(err)
	}
	rc.addr = ln.Addr().String()
	rc.srv = &http.Server{Handler: http.HandlerFunc(rc.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = rc.srv.Serve(ln) }()
}

func (rc *receiver) down() {
	if rc.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = rc.srv.Shutdown(ctx)
		rc.srv = nil
	}
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	hold := rc.hold
	rc.inside++
	rc.peak = max(rc.peak, rc.inside)
	rc.mu.Unlock()
	if hold != nil {
		<-hold
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.inside--
	n := 0
	for _, q := range rc.reqs {
		if q.header.Get("webhook-id") == r.Header.Get("webhook-id") {
			n++
		}
	}
	status, hdr := rc.answer(r, n)
	rc.reqs = append(rc.reqs, request{header: r.Header.Clone(), body: body, status: status, at: time.Now()})
	for k, v := range hdr {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
}

func (rc *receiver) setAnswer(f func(r *http.Request, n int) (int, http.Header)) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.answer = f
}

func (rc *receiver) requests() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]request(nil), rc.reqs...)
}

// succeeded counts 2xx answers per webhook-id.
func (rc *receiver) succeeded() map[string]int {
	out := map[string]int{}
	for _, q := range rc.requests() {
		if q.status < 300 {
			out[q.header.Get("webhook-id")]++
		}
	}
	return out
}

// env is one test's database, store and engine, and the organization (a
// paid key) its endpoints belong to.
type env struct {
	t     *testing.T
	db    *feedtest.DB
	store *store.Store
	clock *fakeClock
	ctx   context.Context
	org   feedtest.Org
}

func newEnv(t *testing.T) *env {
	db := feedtest.New(t)
	box, err := secretbox.New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &env{t: t, db: db, store: store.New(db.Pool, box), clock: newFakeClock(), ctx: ctx, org: db.NewOrg(t, "test", "paid")}
}

// dispatcher builds an engine on the fake clock; loopback receivers need
// the dev policy.
func (e *env) dispatcher(policy egress.Policy, mod func(*delivery.Config)) *delivery.Dispatcher {
	cfg := delivery.Config{Store: e.store, Client: policy.Client(5 * time.Second), Clock: e.clock, Timeout: 5 * time.Second, Tiers: feedtest.Tiers()}
	if mod != nil {
		mod(&cfg)
	}
	d, err := delivery.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

var dev = egress.Policy{AllowLoopback: true}

func (e *env) endpoint(url string, families ...string) (store.Endpoint, string) {
	return e.endpointOf(e.org, url, families...)
}

// endpointOf registers url for org (in the live environment).
func (e *env) endpointOf(org feedtest.Org, url string, families ...string) (store.Endpoint, string) {
	if len(families) == 0 {
		families = feedtest.EventFamilies()
	}
	ep, secret, err := e.store.CreateEndpoint(e.ctx, e.clock.Now(), store.EndpointSpec{Org: org.ID, Env: "live", URL: url,
		Families: families, Description: "test"}, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return ep, secret
}

func (e *env) runOnce(d *delivery.Dispatcher) int {
	e.t.Helper()
	n, err := d.RunOnce(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// drain runs the engine at the current fake time until nothing is due.
func (e *env) drain(d *delivery.Dispatcher) int {
	e.t.Helper()
	total := 0
	for range 1000 {
		n := e.runOnce(d)
		if n == 0 {
			return total
		}
		total += n
	}
	e.t.Fatal("engine never became idle")
	return total
}

type row struct {
	Status        string
	Attempts      int
	NextAttemptAt time.Time
	LastCode      *int
	LastError     string
}

func (e *env) deliveryRows(endpoint string) []row {
	e.t.Helper()
	rows, err := e.db.Pool.Query(e.ctx, `SELECT status, attempts, next_attempt_at, last_status_code, last_error
		FROM civicgate.webhook_deliveries WHERE endpoint_id = $1 ORDER BY id`, endpoint)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.Status, &r.Attempts, &r.NextAttemptAt, &r.LastCode, &r.LastError); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func decodeEnvelope(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return m
}

// holdAll makes the receiver hold every request until the returned channel
// is closed.
func (rc *receiver) holdAll() chan struct{} {
	release := make(chan struct{})
	rc.mu.Lock()
	rc.hold = release
	rc.mu.Unlock()
	return release
}

// start runs an engine with cfg (real clock; the test tiers unless cfg has
// some) until stop closes; wg.Wait waits for it to finish.
func (e *env) start(cfg delivery.Config, stop <-chan struct{}, wg *sync.WaitGroup) {
	e.t.Helper()
	if cfg.Tiers == nil {
		cfg.Tiers = feedtest.Tiers()
	}
	d, err := delivery.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := contextUntil(e, stop)
	wg.Add(1)
	go func() { defer wg.Done(); defer cancel(); d.Run(ctx) }()
}

// contextUntil is a context cancelled when stop closes.
func contextUntil(e *env, stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(e.ctx)
	go func() {
		select {
		case <-stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	return ctx, cancel
}
