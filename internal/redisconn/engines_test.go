package redisconn

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// callTimeout is civic_rate_limit's per-call deadline: a warmed client's
// first command must fit in it.
const callTimeout = 50 * time.Millisecond

var tuning = Tuning{DialTimeout: callTimeout, ReadTimeout: callTimeout, WriteTimeout: callTimeout, MaxRetries: -1,
	ContextTimeoutEnabled: true}

// open resolves url and opens a tuned client, closed when the test ends.
func open(t *testing.T, c Config) (redis.UniversalClient, *Target) {
	t.Helper()
	tg, err := c.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	cl := tg.Open(tuning)
	t.Cleanup(func() { _ = cl.Close() })
	return cl, tg
}

// within runs one command under callTimeout.
func within(t *testing.T, what string, f func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := f(ctx); err != nil {
		t.Fatalf("%s within %s of a warmed client: %v", what, callTimeout, err)
	}
}

var probe = redis.NewScript(`return redis.call('INCR', KEYS[1])`)

// TestTLSWithACLUser: rediss:// with a custom CA and an ACL user connects;
// a wrong password fails with cause auth, an unknown CA with cause tls, and
// neither the log nor the error holds the password.
func TestTLSWithACLUser(t *testing.T) {
	srv := testenv.StartRedisTLS(t)
	c, tg := open(t, Config{URL: srv.URL()})
	core, logs := observer.New(zap.InfoLevel)
	r, _ := NewReporter("test_tls", nil, zap.New(core))
	if err := r.Warm(context.Background(), c, tg, probe); err != nil {
		t.Fatal(err)
	}
	within(t, "EVALSHA", func(ctx context.Context) error {
		return probe.EvalSha(ctx, c, []string{"tls:" + testenv.RandomSuffix(6)}).Err()
	})

	wrong := strings.Replace(srv.URL(), srv.Password, "not-"+srv.Password, 1)
	cw, tw := open(t, Config{URL: wrong})
	// Warm's own bound (WarmTimeout), not a shorter one: on a loaded machine
	// a handshake can take long, and an auth or tls failure ends Warm early.
	err := r.Warm(context.Background(), cw, tw)
	if Cause(err) != CauseAuth {
		t.Errorf("wrong password: cause %s (%v), want auth", Cause(err), err)
	}

	other := filepath.Join(t.TempDir(), "other-ca.pem")
	if err := os.WriteFile(other, newTestCA(t).certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	co, to := open(t, Config{URL: "rediss://" + srv.Addr, Username: srv.Username, Password: srv.Password, TLS: &TLS{CA: other}})
	err = r.Warm(context.Background(), co, to)
	if Cause(err) != CauseTLS {
		t.Errorf("unknown CA: cause %s (%v), want tls", Cause(err), err)
	}
	warns := logs.FilterLevelExact(zap.WarnLevel).All()
	if len(warns) != 2 {
		t.Fatalf("%d warnings, want one per failed warm-up", len(warns))
	}
	for _, l := range logs.All() {
		if f := l.ContextMap(); strings.Contains(l.Message+" "+asString(f["error"])+" "+asString(f["redis"]), srv.Password) {
			t.Errorf("the log holds the password: %s %v", l.Message, f)
		}
	}
	if warns[0].ContextMap()["cause"] != CauseAuth || warns[1].ContextMap()["cause"] != CauseTLS {
		t.Errorf("warnings' causes %v, %v", warns[0].ContextMap()["cause"], warns[1].ContextMap()["cause"])
	}
}

func asString(v any) string {
	s, _ := v.(string)
	return s
}

// TestClusterWarm: after Warm, the first command on every master (a script,
// loaded by Warm) succeeds within civic_rate_limit's 50 ms deadline.
func TestClusterWarm(t *testing.T) {
	cluster := testenv.StartRedisCluster(t, 3, 0)
	c, tg := open(t, Config{URL: cluster.URL()})
	if tg.Mode() != ModeCluster {
		t.Fatalf("mode %s", tg.Mode())
	}
	r, _ := NewReporter("test_cluster", nil, nil)
	if err := r.Warm(context.Background(), c, tg, probe); err != nil {
		t.Fatal(err)
	}
	covered := map[int]bool{}
	for i := 0; len(covered) < 3 && i < 1000; i++ {
		key := "warm:{" + strconv.Itoa(i) + "}"
		rng := cluster.RangeOf(t, key)
		if covered[rng] {
			continue
		}
		covered[rng] = true
		within(t, "EVALSHA on master "+strconv.Itoa(rng), func(ctx context.Context) error {
			return probe.EvalSha(ctx, c, []string{key}).Err()
		})
	}
	if len(covered) != 3 {
		t.Fatalf("keys reached %d masters, want 3", len(covered))
	}
}

// TestSentinelWarm: Warm resolves the master through the sentinels; the
// client then writes to it within 50 ms.
func TestSentinelWarm(t *testing.T) {
	s := testenv.StartRedisSentinel(t)
	c, tg := open(t, Config{URL: s.URL()})
	if tg.Mode() != ModeSentinel {
		t.Fatalf("mode %s", tg.Mode())
	}
	r, _ := NewReporter("test_sentinel", nil, nil)
	if err := r.Warm(context.Background(), c, tg, probe); err != nil {
		t.Fatal(err)
	}
	within(t, "EVALSHA", func(ctx context.Context) error { return probe.EvalSha(ctx, c, []string{"sentinel:warm"}).Err() })
	var port string
	within(t, "INFO", func(ctx context.Context) error {
		info, err := c.Info(ctx, "server").Result()
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "tcp_port:"); ok {
				port = v
			}
		}
		return err
	})
	if master := s.MasterAddr(t); !strings.HasSuffix(master, ":"+port) {
		t.Errorf("connected to port %s, the master is %s", port, master)
	}
}

// TestWarmNamesTheDialFailure: when go-redis is still retrying a dial that
// fails verification (here it would retry for 10 s) as the warm-up's time
// runs out, Warm returns the dial's tls failure, not the deadline.
func TestWarmNamesTheDialFailure(t *testing.T) {
	srv := testenv.StartRedisTLS(t)
	other := filepath.Join(t.TempDir(), "other-ca.pem")
	if err := os.WriteFile(other, newTestCA(t).certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	tg, err := (&Config{URL: "rediss://" + srv.Addr, Username: srv.Username, Password: srv.Password, TLS: &TLS{CA: other}}).Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	slow := tuning
	slow.DialerRetries = 100 // 100 ms apart: the dial outlives WarmTimeout
	c := tg.Open(slow)
	t.Cleanup(func() { _ = c.Close() })
	err = tg.Warm(context.Background(), c)
	if Cause(err) != CauseTLS || !strings.Contains(err.Error(), "no answer in time") {
		t.Fatalf("warm-up: cause %s (%v), want tls after the deadline", Cause(err), err)
	}
}
