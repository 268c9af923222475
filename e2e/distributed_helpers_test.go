package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// sharedEnv is what gateways of one deployment have in common: the database,
// Redis and its key prefixes, the secrets and the backend.
var sharedEnv = []string{"DATABASE_URL", "REDIS_URL", "CIVICGATE_RL_PREFIX", "CIVICGATE_CACHE_PREFIX",
	"CIVIC_IDENTITY_SECRET", "CIVIC_WEBHOOK_SECRET_KEY", "CIVICGATE_UPSTREAM", "RECORDSD_LISTEN",
	"RECORDSD_CURSOR_SECRET"}

// startGateways starts one recordsd and n gateways (the shipped
// caddyfile/Caddyfile.local) on one database, one Redis (redisURL) and one
// key prefix, as docs/operations.md "Scaling out" deploys them. env ("NAME=value") is
// set on every stack before anything starts. The first stack runs recordsd
// and issues keys.
func startGateways(t testing.TB, n int, redisURL string, env ...string) []*stack.Stack {
	t.Helper()
	return startFleet(t, n, redisURL, env...).gateways
}

// fleet is what startFleet started.
type fleet struct {
	gateways []*stack.Stack
	procs    []*stack.Proc // the gateways' processes
	recordsd *stack.Proc
}

// startFleet is startGateways that also returns the processes.
func startFleet(t testing.TB, n int, redisURL string, env ...string) fleet {
	t.Helper()
	a := stack.New(t, &bins)
	a.Setenv("REDIS_URL", redisURL)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		a.Setenv(k, v)
	}
	a.Prepare()
	f := fleet{gateways: []*stack.Stack{a}, recordsd: a.StartRecordsd()}
	for range n - 1 {
		s := stack.New(t, &bins)
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			s.Setenv(k, v)
		}
		for _, name := range sharedEnv {
			s.Setenv(name, a.Getenv(name))
		}
		f.gateways = append(f.gateways, s)
	}
	for _, s := range f.gateways {
		f.procs = append(f.procs, s.StartGateway("caddyfile/Caddyfile.local"))
	}
	return f
}

// metricSum sums every sample of a metric (all label sets) over the
// gateways' admin /metrics endpoints; a metric not exposed counts 0.
func metricSum(t testing.TB, gateways []*stack.Stack, name string) float64 {
	t.Helper()
	total := 0.0
	for _, s := range gateways {
		resp, err := http.Get("http://" + s.Getenv("CIVICGATE_ADMIN") + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			rest, ok := strings.CutPrefix(line, name)
			if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
				continue
			}
			f := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
			if len(f) == 0 {
				continue
			}
			v, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			total += v
		}
		resp.Body.Close()
	}
	return total
}

// loadAnswer is one answered request of a load.
type loadAnswer struct {
	at     time.Time
	status int
}

// load sends GET /bills?limit=1 through every gateway from two clients each,
// 50 requests a second in all (a steady load a loaded 2-core machine keeps
// up with under -race; about 2.5 rate-limit round trips a second). It moves
// to the next of its keys after 900 admissions (an enterprise key allows
// 1000 a minute; a spent key is refused from each gateway's memory without a
// Redis call, so moving on keeps Redis in every decision) and stays on the
// last. Every answer must be 200, or 429 with Retry-After; anything else, or
// a request without an answer, is recorded as bad.
type load struct {
	keys     []string
	admitted atomic.Int64
	pace     *time.Ticker
	stop     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	answers  []loadAnswer
	bad      []string
}

func startLoad(gateways []*stack.Stack, keys []string) *load {
	l := &load{keys: keys, pace: time.NewTicker(20 * time.Millisecond), stop: make(chan struct{})}
	for _, s := range append(append([]*stack.Stack{}, gateways...), gateways...) {
		l.wg.Add(1)
		go l.client(s)
	}
	return l
}

func (l *load) client(s *stack.Stack) {
	defer l.wg.Done()
	for {
		select {
		case <-l.stop:
			return
		case <-l.pace.C:
		}
		key := l.keys[min(int(l.admitted.Load()/900), len(l.keys)-1)]
		req, _ := http.NewRequest(http.MethodGet, s.HTTPSURL+"/bills?limit=1", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := s.Client.Do(req)
		if err != nil {
			l.fail(err.Error())
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK:
			l.admitted.Add(1)
		case resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "":
		default:
			l.fail(strconv.Itoa(resp.StatusCode) + " " + string(body))
			continue
		}
		l.mu.Lock()
		l.answers = append(l.answers, loadAnswer{at: time.Now(), status: resp.StatusCode})
		l.mu.Unlock()
	}
}

func (l *load) fail(what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.bad) < 20 {
		l.bad = append(l.bad, time.Now().Format("15:04:05.000")+" "+what)
	}
}

// answered is the number of good answers so far.
func (l *load) answered() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.answers)
}

// between counts the good answers received in [from, to).
func (l *load) between(from, to time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, a := range l.answers {
		if !a.at.Before(from) && a.at.Before(to) {
			n++
		}
	}
	return n
}

// awaitAnswers waits until n more good answers arrived (the load is moving).
func (l *load) awaitAnswers(t testing.TB, n int) {
	t.Helper()
	target := l.answered() + n
	stack.WaitFor(t, 60*time.Second, strconv.Itoa(n)+" more answers under load", func() error {
		if got := l.answered(); got < target {
			return fmt.Errorf("%d of %d answers; bad so far: %q", got, target, l.badAnswers())
		}
		return nil
	})
}

func (l *load) badAnswers() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.bad...)
}

// end stops the load and fails the test for every bad answer.
func (l *load) end(t testing.TB) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	l.pace.Stop()
	for _, b := range l.bad {
		t.Errorf("under load: %s", b)
	}
}

// awaitSharedCounting waits until the gateways decide in Redis (again),
// failing the test after within: over 60 good answers of the load (or
// more), their Redis calls grew and their store errors did not.
func awaitSharedCounting(t testing.TB, gateways []*stack.Stack, l *load, within time.Duration) {
	t.Helper()
	start := time.Now()
	var dCalls float64
	stack.WaitFor(t, within, "the gateways to decide in Redis", func() error {
		calls, errs := metricSum(t, gateways, "civicgate_ratelimit_redis_calls_total"),
			metricSum(t, gateways, "civicgate_ratelimit_store_errors_total")
		l.awaitAnswers(t, 60)
		dCalls = metricSum(t, gateways, "civicgate_ratelimit_redis_calls_total") - calls
		dErrs := metricSum(t, gateways, "civicgate_ratelimit_store_errors_total") - errs
		if dErrs != 0 || dCalls == 0 {
			return fmt.Errorf("last %v Redis calls, %v store errors over 60 answers", dCalls, dErrs)
		}
		return nil
	})
	t.Logf("shared counting after %s: %v Redis calls, no store error over 60 answers",
		time.Since(start).Round(time.Millisecond), dCalls)
}

// issueKeys issues n enterprise keys for distinct organizations, in
// parallel, and returns them with their ids.
func issueKeys(t testing.TB, s *stack.Stack, org string, n int) (keys, ids []string) {
	t.Helper()
	keys, ids = make([]string, n), make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			out, err := s.RunErr(bins.Civicgate, "keys", "issue", "--org", org+strconv.Itoa(i), "--tier", "enterprise", "--env", "live")
			keys[i], ids[i] = liveKey.FindString(out), liveKeyID.FindString(out)
			if err == nil && (keys[i] == "" || ids[i] == "") {
				err = fmt.Errorf("keys issue printed no key or id")
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("issue keys: %v", err)
		}
	}
	return keys, ids
}

var liveKey, liveKeyID = regexp.MustCompile(`cg_live_[0-9A-Za-z]+`), regexp.MustCompile(`key_[0-9A-Za-z]+`)
