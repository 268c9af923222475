package e2e

import (
	"math"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// TestQuotaSlidingWindowRealClock sends one paid_beta key (100/m) through
// the real gateway at a steady 4 requests a second for 130 s — just over two
// windows — on the real clock, Redis' and the gateway's, and checks what a
// client can see of docs/design.md D26 (sliding windows: no 60 s ever admits
// more than the quota) and of Retry-After (docs/api.md "Rate limits": the
// exact whole seconds until a request will be admitted).
//
// Client timestamps. The client notes when it sends each request and when
// the response arrives; the gateway decides the request in between (the
// limiter's and Redis' clocks are this machine's clock). The client sends
// one request at a time, so the decisions are in send order. Every check
// below is stated on those two instants so that it can fail only on a real
// defect, never on a slow request:
//
//   - Window: "no 59 s span of send times holds more than 100 admitted" is
//     the intent (60 s less a 1 s allowance for the time between a client's
//     send and the gateway's decision). It is checked exactly instead: for
//     admitted requests i and j = i+100, all 101 decisions lie between i's
//     send and j's response, so j's response must come at least 60 s after
//     i's send. Whenever requests take under 1 s this is stricter than the
//     59 s rule, and it never blames the gateway for a slow response.
//   - Retry-After lower bound: a 429 decided at d with Retry-After N means
//     the next admission is more than N−1 s after d (N is rounded up), and
//     d comes after the 429's send; a later admission is decided before its
//     response. So every admitted request after a 429 sent at s with N must
//     be answered later than s + N − 1 s. ("No request sent before t+N−1 is
//     admitted", with both ends taken on the side that cannot misfire.)
//   - Retry-After upper bound: the 429 was decided before the client
//     received it at t, so a request sent at or after t+N reaches the
//     limiter after the time Retry-After promised; the first such request
//     must be admitted — unless a request sent in between (at t+N−1…t+N,
//     inside the rounding) was admitted and took the freed room, or got a
//     500 (see below), which may have taken it too.
//   - Totals: at most 100 per started window over the run, and in every
//     full window from the first send, at least 95 admitted (the key gets
//     its quota: a refusal frees up at most one bucket, 60/64 s, late).
//
// The gateway runs the shipped routes and tiers with on_store_error closed:
// a Redis call over its 50 ms deadline then answers 500 instead of deciding
// in one gateway's memory (the shipped local mode, which would start this
// key afresh there). A 500 is counted as not admitted; since Redis may have
// granted that call a lease (two units) that nobody spends, each 500 lowers
// the 95 floor by two.
func TestQuotaSlidingWindowRealClock(t *testing.T) {
	t.Parallel()
	s := stack.New(t, &bins)
	s.Prepare()
	key, _ := s.IssueKey("clockco", "paid_beta", "live")
	s.StartRecordsd()
	s.StartGateway(gatewayFiles(t, s.Root, nil, storeClosed))

	const (
		quota  = 100
		window = time.Minute
		run    = 130 * time.Second
		period = 250 * time.Millisecond // 4 requests a second
	)
	// Request i is sent at i × 250 ms plus a random jitter under 200 ms: the
	// same steady rate, but the sends do not keep one phase against the
	// gateway's whole seconds, so that the refusals' Retry-After values land
	// at every fraction of a second and the first request after them is
	// often not preceded by another admission (which would take the room).
	seed := uint64(time.Now().UnixNano())
	t.Logf("jitter seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 26))
	var log []exchange
	var retry []int64 // Retry-After of each 429 (0 otherwise)
	start := time.Now()
	for i := 0; time.Duration(i)*period < run; i++ {
		// Pacing, not waiting for a condition: the load is a steady rate.
		jitter := time.Duration(rng.Int64N(int64(200 * time.Millisecond)))
		time.Sleep(time.Until(start.Add(time.Duration(i)*period + jitter)))
		x := send(t, s, http.MethodGet, "/bills?limit=1", key, "")
		n := int64(0)
		switch x.status {
		case http.StatusOK:
		case http.StatusTooManyRequests:
			n = refusal(t, x, "paid_beta")
		case http.StatusInternalServerError:
			if x.body != `{"error":"Internal Server Error"}` {
				t.Fatalf("500 %s", x.body)
			}
		default:
			t.Fatalf("request %d: %d %s", i, x.status, x.body)
		}
		log = append(log, x)
		retry = append(retry, n)
	}
	var admitted []exchange
	failed := 0
	for _, x := range log {
		switch x.status {
		case http.StatusOK:
			admitted = append(admitted, x)
		case http.StatusInternalServerError:
			failed++
		}
	}
	first, last := log[0], log[len(log)-1]
	t.Logf("%d requests in %s: %d admitted, %d refused, %d store failures (500)",
		len(log), last.received.Sub(first.sent).Round(time.Millisecond), len(admitted), len(log)-len(admitted)-failed, failed)

	// No window of 60 s holds more than the quota.
	for i := 0; i+quota < len(admitted); i++ {
		a, b := admitted[i], admitted[i+quota]
		if span := b.received.Sub(a.sent); span < window {
			t.Errorf("%d requests admitted within %s: sent from %s to %s after the start",
				quota+1, span.Round(time.Millisecond), a.sent.Sub(start).Round(time.Millisecond), b.sent.Sub(start).Round(time.Millisecond))
		}
	}
	// For the record, the 59 s form on send times alone.
	most := 0
	for i, j := 0, 0; j < len(admitted); j++ {
		for admitted[j].sent.Sub(admitted[i].sent) >= window-time.Second {
			i++
		}
		most = max(most, j-i+1)
	}
	t.Logf("most admitted in any 59 s of send times: %d", most)

	// At most the quota per started window, at least 95 % of it per full one.
	started := int(math.Ceil(float64(last.received.Sub(first.sent)) / float64(window)))
	if len(admitted) > quota*started {
		t.Errorf("%d admitted over %d started windows, want at most %d", len(admitted), started, quota*started)
	}
	floor := 95 - 2*failed
	for k := 0; first.sent.Add(time.Duration(k+1) * window).Before(last.sent); k++ {
		from, to := first.sent.Add(time.Duration(k)*window), first.sent.Add(time.Duration(k+1)*window)
		n := 0
		for _, x := range admitted {
			if !x.sent.Before(from) && x.sent.Before(to) {
				n++
			}
		}
		t.Logf("window %d: %d admitted", k+1, n)
		if n < floor {
			t.Errorf("window %d (%s to %s): %d admitted, want at least %d", k+1, from.Sub(start), to.Sub(start), n, floor)
		}
	}

	// Retry-After is honoured to the second.
	checked := 0
	for i, x := range log {
		n := retry[i]
		if n == 0 {
			continue
		}
		notBefore := x.sent.Add(time.Duration(n-1) * time.Second)
		freeAt := x.received.Add(time.Duration(n) * time.Second)
		tookRoom := false
		for j := i + 1; j < len(log); j++ {
			y := log[j]
			if y.status == http.StatusOK && !y.received.After(notBefore) {
				t.Errorf("a 429 sent at %s said Retry-After %d, but a request sent at %s was admitted (answered %s)",
					x.sent.Sub(start).Round(time.Millisecond), n, y.sent.Sub(start).Round(time.Millisecond), y.received.Sub(start).Round(time.Millisecond))
			}
			if y.sent.Before(freeAt) {
				tookRoom = tookRoom || y.status != http.StatusTooManyRequests
				continue
			}
			// y is the first request sent at or after t+N (a 500 there is a
			// store failure, which says nothing of Retry-After).
			if !tookRoom && y.status != http.StatusInternalServerError {
				checked++
				if y.status != http.StatusOK {
					t.Errorf("a 429 received at %s said Retry-After %d; the request sent at %s (%s later) got %d, RateLimit %q",
						x.received.Sub(start).Round(time.Millisecond), n, y.sent.Sub(start).Round(time.Millisecond),
						y.sent.Sub(x.received).Round(time.Millisecond), y.status, y.header.Get("RateLimit"))
				}
			}
			break
		}
	}
	t.Logf("Retry-After honoured by the first request after it: %d refusals checked", checked)
	if checked == 0 {
		t.Error("no refusal was followed by a request at its Retry-After: the run checked nothing")
	}
}
