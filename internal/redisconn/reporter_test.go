package redisconn

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestReporterRateLimits: a burst of N errors of one cause is one log line
// and N counts; a second later the next line tells what was suppressed; a
// second cause has its own line; the password is never logged.
func TestReporterRateLimits(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	reg := prometheus.NewRegistry()
	component := "test_burst_" + testenv.RandomSuffix(6) // counters live as long as the process (-count=N)
	r, err := NewReporter(component, reg, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }

	// a real refusal: a port nothing listens on
	tg, err := (&Config{URL: "redis://gw:" + secret + "@127.0.0.1:" + itoa(testenv.FreePort(t))}).Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := tg.Open(Tuning{MaxRetries: -1})
	defer c.Close()
	pingErr := c.Ping(context.Background()).Err()
	if Cause(pingErr) != CauseRefused {
		t.Fatalf("cause of %v: %s, want refused", pingErr, Cause(pingErr))
	}
	const n = 25
	for range n {
		if cause := r.Report(pingErr, "store error"); cause != CauseRefused {
			t.Fatalf("cause %q", cause)
		}
	}
	if got := logs.Len(); got != 1 {
		t.Fatalf("%d log lines after a burst of %d, want 1", got, n)
	}
	if got := counter(t, reg, component, CauseRefused); got != n {
		t.Fatalf("counter %v, want %d", got, n)
	}
	now = now.Add(time.Second)
	r.Report(pingErr, "store error")
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	r.Report(c.Ping(ctx).Err(), "store error")
	r.Report(context.Canceled, "store error") // not a store error
	lines := logs.All()
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3: %v", len(lines), lines)
	}
	if f := lines[1].ContextMap(); f["cause"] != CauseRefused || f["suppressed"] != int64(n-1) || f["component"] != component {
		t.Errorf("second line %v: want cause refused, suppressed %d", f, n-1)
	}
	if f := lines[2].ContextMap(); f["cause"] != CauseTimeout || f["suppressed"] != int64(0) {
		t.Errorf("third line %v: want cause timeout, nothing suppressed", f)
	}
	for _, l := range lines {
		if s := l.Message + " " + l.ContextMap()["error"].(string); containsSecret(s) {
			t.Errorf("log line holds the password: %s", s)
		}
	}
}

func TestCauses(t *testing.T) {
	cases := map[string]string{
		"WRONGPASS invalid username-password pair":              CauseAuth,
		"NOAUTH Authentication required.":                       CauseAuth,
		"NOPERM this user has no permissions to run 'eval'":     CauseAuth,
		"MOVED 3999 127.0.0.1:6381":                             CauseMoved,
		"ASK 3999 127.0.0.1:6381":                               CauseMoved,
		"CLUSTERDOWN The cluster is down":                       CauseClusterDown,
		"TRYAGAIN Multiple keys request during rehashing":       CauseClusterDown,
		"READONLY You can't write against a read only replica.": CauseReadOnly,
		"LOADING Redis is loading the dataset in memory":        CauseLoading,
		"ERR Error running script (call to f_1): @user_script:1: -READONLY You can't write against a read only replica.": CauseReadOnly,
		"ERR unknown command": CauseOther,
	}
	for msg, want := range cases {
		err := redisError(msg)
		if got := Cause(err); got != want {
			t.Errorf("Cause(%q) = %s, want %s", msg, got, want)
		}
		if got := Cause(errors.Join(errors.New("ratelimit: redis window"), err)); got != want {
			t.Errorf("Cause(wrapped %q) = %s, want %s", msg, got, want)
		}
	}
}

// replyError is an error reply as go-redis returns it (a redis.Error); most
// of these replies need a cluster or replica in a failing state.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

func redisError(msg string) error { return replyError(msg) }

var _ redis.Error = replyError("")

func itoa(n int) string { return strconv.Itoa(n) }

func containsSecret(s string) bool { return strings.Contains(s, secret) }

// counter is the registered counter of component and cause.
func counter(t *testing.T, reg *prometheus.Registry, component, cause string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != ErrorsMetric {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["component"] == component && labels["cause"] == cause {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no %s{component=%q,cause=%q}", ErrorsMetric, component, cause)
	return 0
}
