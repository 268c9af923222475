package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// sink is a webhook receiver on loopback: it verifies every delivery with the
// Standard Webhooks library and counts deliveries per webhook-id. While
// refusing is on, the first attempt of every fifth new event is answered 503,
// so retries are exercised too.
type sink struct {
	t        *testing.T
	srv      *httptest.Server
	mu       sync.Mutex
	verifier *standardwebhooks.Webhook
	got      map[string]int
	bad      []string
	seen     int
	refusing bool
	spared   map[string]bool // never refused: their next attempt may already be a retry
	slow     time.Duration   // each delivery takes this long (a slow receiver)
}

func newSink(t *testing.T) *sink {
	k := &sink{t: t, got: map[string]int{}, refusing: true}
	k.srv = httptest.NewServer(http.HandlerFunc(k.serve))
	t.Cleanup(k.srv.Close)
	return k
}

func (k *sink) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	k.mu.Lock()
	slow := k.slow
	k.mu.Unlock()
	time.Sleep(slow) // the receiver's own pace, so faults land mid-delivery
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil || k.verifier == nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if err := k.verifier.Verify(body, r.Header); err != nil {
		k.bad = append(k.bad, fmt.Sprintf("signature: %v", err))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	id := r.Header.Get("webhook-id")
	if r.Header.Get("X-Service-Signature") != r.Header.Get("webhook-signature") {
		k.bad = append(k.bad, "X-Service-Signature differs from webhook-signature")
	}
	if _, known := k.got[id]; !known {
		k.seen++
		if k.refusing && !k.spared[id] && k.seen%5 == 0 {
			k.got[id] = 0 // first attempt refused: the retry must come
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
	}
	k.got[id]++
	w.WriteHeader(http.StatusNoContent)
}

// delivered returns a copy of the delivery counts.
func (k *sink) delivered() map[string]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[string]int, len(k.got))
	for id, n := range k.got {
		if n > 0 {
			out[id] = n
		}
	}
	return out
}

// legislators writes a legislators-current.yaml of n members whose names
// carry the round, so every round changes every member (n events).
func legislators(t *testing.T, n, round int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "- id:\n    bioguide: Q%06d\n  name:\n    first: Round%d\n    last: Member%d\n    official_full: Round%d Member%d\n", i, round, i, round, i)
		fmt.Fprintf(&b, "  terms:\n  - type: rep\n    start: '2025-01-03'\n    end: '2027-01-03'\n    state: WA\n    district: %d\n    party: Independent\n", i%10+1)
	}
	path := filepath.Join(t.TempDir(), fmt.Sprintf("legislators-%d.yaml", round))
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// withDB runs f on a direct connection to the stack's database.
func withDB(t *testing.T, dsn string, f func(ctx context.Context, conn *pgx.Conn) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := f(ctx, conn); err != nil {
		t.Fatal(err)
	}
}

// memberEvents lists the webhook-ids of members events after seq (direct
// from change_events, the outbox itself).
func memberEvents(t *testing.T, dsn string, after int64) map[string]bool {
	out := map[string]bool{}
	withDB(t, dsn, func(ctx context.Context, conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, `SELECT event_id::text FROM change_events WHERE family = 'members' AND id > $1`, after)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		for _, id := range ids {
			out[id] = true
		}
		return err
	})
	return out
}

// deliveryRows shows the webhook_deliveries rows of some events.
func deliveryRows(t *testing.T, dsn string, eventIDs []string) string {
	var b strings.Builder
	withDB(t, dsn, func(ctx context.Context, conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, `SELECT event_id::text, kind, status, attempts, next_attempt_at, lease_until, coalesce(last_status_code, 0), last_error
			FROM civicgate.webhook_deliveries WHERE event_id::text = ANY($1) ORDER BY id`, eventIDs)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, kind, status, lastErr string
			var attempts, code int
			var next time.Time
			var lease *time.Time
			if err := rows.Scan(&id, &kind, &status, &attempts, &next, &lease, &code, &lastErr); err != nil {
				return err
			}
			fmt.Fprintf(&b, "  %s %s %s attempts=%d next=%s lease=%v last=%d %q\n", id, kind, status, attempts, next.Format(time.RFC3339), lease, code, lastErr)
		}
		return rows.Err()
	})
	if b.Len() == 0 {
		return "  (no delivery rows: the events were never fanned out to the endpoint)"
	}
	return b.String()
}

// undelivered is waitAll's "not yet": the events still missing. Their rows of
// webhook_deliveries are read only when the error is shown, on failure, not
// on every poll.
type undelivered struct {
	of      int
	missing []string
	rows    func() string
}

func (u undelivered) Error() string {
	return fmt.Sprintf("%d of %d events not delivered; their deliveries:\n%s", len(u.missing), u.of, u.rows())
}

// maxEventSeq is the position of the newest change event.
func maxEventSeq(t *testing.T, dsn string) int64 {
	var n int64
	withDB(t, dsn, func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM change_events`).Scan(&n)
	})
	return n
}

// testWebhookFaults: events written by the backend's sync are all delivered
// (at least once, signed) across a gateway SIGKILL mid-delivery, a PostgreSQL
// outage mid-delivery (during which sync fails cleanly, and after which it
// resumes) and receiver errors; duplicates stay within at-least-once.
func testWebhookFaults(t *testing.T, f *faultEnv) {
	k, from := subscribe(t, f.env, f.keys[0])
	const members = 30
	// No refusals while faults are injected: a retry that fell into an outage
	// would wait for the schedule's next step (5 min), longer than the test.
	// Slow deliveries (4 in flight, 250 ms each, ≈ 2 s a round): the faults
	// land while deliveries are under way.
	k.mu.Lock()
	k.refusing = false
	k.slow = 250 * time.Millisecond
	k.mu.Unlock()

	// underway waits until deliveries progress: at least one more than
	// before arrived. before is taken when the round starts, not after its
	// sync returned: a slow sync (a race-detector build) may return after the
	// sink has had every delivery of the round.
	underway := func(what string, before int) {
		stack.WaitFor(t, 30*time.Second, what, func() error {
			if len(k.delivered()) == before {
				return fmt.Errorf("none yet")
			}
			return nil
		})
	}

	// Round 1: PostgreSQL goes away while deliveries are under way; a sync
	// during the outage fails cleanly.
	before := len(k.delivered())
	f.s.Run(bins.Recordsd, "sync", "members", "--file", legislators(t, members, 1))
	underway("round 1 deliveries under way", before)
	f.pg.Cut()
	out, err := f.s.RunErr(bins.Recordsd, "sync", "members", "--file", legislators(t, members, 99))
	if err == nil {
		t.Error("sync succeeded while PostgreSQL was unreachable")
	}
	for _, leak := range []string{"panic", "goroutine ", "SELECT ", "INSERT "} {
		if strings.Contains(out, leak) {
			t.Errorf("failed sync printed %q: %.500s", leak, out)
		}
	}
	time.Sleep(2 * time.Second) // the outage's length: deliveries and the sidecar's polls must fail meanwhile
	f.pg.Restore()

	// Round 2: sync resumes; the gateway (and its delivery sidecar) is
	// SIGKILLed while delivering, then restarted. The attempts it had leased
	// are taken over when their lease (15 s, renewed only while its instance
	// lives) runs out.
	before = len(k.delivered())
	f.s.Run(bins.Recordsd, "sync", "members", "--file", legislators(t, members, 2))
	underway("round 2 deliveries under way", before)
	f.gw.Kill()
	atKill := len(k.delivered())
	f.gw = f.s.StartGateway("caddyfile/Caddyfile.local")

	// After the faults: the receiver refuses some first attempts, the 5 s
	// retries deliver them. Events from rounds 1–2 are spared: one that was in
	// flight when the gateway died may first reach the sink as its second
	// attempt (taken over when the lease ended), and a refused second attempt
	// waits 5 min for its third.
	spared := memberEvents(t, f.s.DSN, from)
	k.mu.Lock()
	k.refusing, k.slow, k.spared = true, 0, spared
	k.mu.Unlock()
	f.s.Run(bins.Recordsd, "sync", "members", "--file", legislators(t, members, 3))

	want := memberEvents(t, f.s.DSN, from)
	if len(want) < 3*members {
		t.Fatalf("only %d member events written by three syncs of %d members", len(want), members)
	}
	dups := k.waitAll(t, f.s.DSN, want)
	// At least once: a delivery in flight when the gateway died may repeat;
	// anything beyond the in-flight bound (4 per endpoint) plus the
	// deliveries whose outcome PostgreSQL lost is a duplication bug.
	if dups > 8 {
		t.Errorf("%d duplicate deliveries for %d events", dups, len(want))
	}
	t.Logf("webhooks: %d events, all delivered; %d duplicates; %d delivered before the SIGKILL", len(want), dups, atKill)
}

// subscribe registers a sink for the members family with key's organization
// and returns it with the change_events position it starts after.
func subscribe(t *testing.T, e *env, key string) (*sink, int64) {
	k := newSink(t)
	create := call{name: "create endpoint", method: "POST", path: "/v1/webhook-endpoints", key: key, ctype: "application/json",
		body: `{"url":"` + k.srv.URL + `/hook","families":["members"]}`}
	r := send(t.Context(), e.s.Client, e.s.HTTPSURL, &create)
	if r.status != 201 {
		t.Fatalf("create endpoint: %d %v %s", r.status, r.err, r.body)
	}
	var ep struct {
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal([]byte(r.body), &ep); err != nil {
		t.Fatal(err)
	}
	v, err := standardwebhooks.NewWebhook(ep.Secret)
	if err != nil {
		t.Fatal(err)
	}
	k.mu.Lock()
	k.verifier = v
	k.mu.Unlock()
	return k, maxEventSeq(t, e.s.DSN)
}

// waitAll waits until every event of want was delivered, checks nothing else
// was and every delivery verified, and returns the number of duplicates. When
// some never arrive it shows their rows of webhook_deliveries.
func (k *sink) waitAll(t *testing.T, dsn string, want map[string]bool) int {
	t.Helper()
	// Up to a crashed sidecar's lease (15 s) plus a retry step (5 s), and slack
	// for a loaded machine.
	stack.WaitFor(t, 60*time.Second, fmt.Sprintf("all %d events to be delivered", len(want)), func() error {
		got := k.delivered()
		var missing []string
		for id := range want {
			if got[id] == 0 {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		return undelivered{of: len(want), missing: missing, rows: func() string { return deliveryRows(t, dsn, missing) }}
	})
	got := k.delivered()
	dups := 0
	for id, n := range got {
		if !want[id] {
			t.Errorf("delivered an event that is not in change_events: %s", id)
		}
		dups += n - 1
	}
	k.mu.Lock()
	bad := append([]string(nil), k.bad...)
	k.mu.Unlock()
	if len(bad) > 0 {
		t.Errorf("%d bad deliveries, first: %s", len(bad), bad[0])
	}
	return dups
}
