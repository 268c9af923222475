package ratelimit

import (
	"context"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/redisconn"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/contract"
)

// TestSharedQuotaOnTLSCluster: two limiter instances on a 3-master Cluster
// that speaks TLS only (a test CA, an ACL user, the default user off),
// connected through the URL form rediss://user:password@n1?addr=…&mode=cluster&tls_ca_file=…,
// share each key's quota without a store error; the same URL with another
// CA fails the warm-up with cause tls.
func TestSharedQuotaOnTLSCluster(t *testing.T) {
	cluster := testenv.StartRedisClusterTLS(t, 3, 0)
	u := tlsURL(t, cluster.URL(), cluster.CAFile, "mode", "cluster")
	checkSharedQuota(t, u, cluster, []string{"alpha", "beta", "we{ird}", "50%"})

	p, _ := url.Parse(u)
	q := p.Query()
	q.Set("tls_ca_file", testenv.OtherCA(t))
	p.RawQuery = q.Encode()
	tg, err := (&redisconn.Config{URL: p.String()}).Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	client := tg.Open(redisconn.Tuning{DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
		MaxRetries: -1, ContextTimeoutEnabled: true})
	defer client.Close()
	if err := tg.Warm(context.Background(), client, windowScript); redisconn.Cause(err) != redisconn.CauseTLS {
		t.Errorf("another CA: warm-up cause %s (%v), want tls", redisconn.Cause(err), err)
	}
}

// TestSharedQuotaOnTLSSentinel: the same on Sentinel over TLS (the sentinels
// and the master both, with the same CA), through the URL form
// rediss://user:password@s1?addr=…&master_name=…&tls_ca_file=…, the user
// being the master's ACL user.
func TestSharedQuotaOnTLSSentinel(t *testing.T) {
	sentinel := testenv.StartRedisSentinelTLS(t)
	checkSharedQuota(t, tlsURL(t, sentinel.URL(), sentinel.CAFile, "master_name", sentinel.MasterName()), nil, []string{"alpha", "beta", "we{ird}", "50%"})
}

// tlsURL checks that u is the TLS URL form with the CA file and an ACL
// user's credentials, and the option name=value, and returns it.
func tlsURL(t *testing.T, u, caFile, name, value string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	if pw, ok := p.User.Password(); p.Scheme != "rediss" || p.User.Username() == "" || !ok || pw == "" ||
		p.Query().Get("tls_ca_file") != caFile || p.Query().Get(name) != value {
		t.Fatalf("URL %q: want rediss://user:password@… with tls_ca_file=%s and %s=%s", u, caFile, name, value)
	}
	return u
}

// checkSharedQuota: two instances (four goroutines) on u share one quota of
// 600/min (and a second policy): each key is admitted 570…600 times of 1000,
// with no store error; on a cluster (not nil) each key's Redis keys share a
// slot and the keys reach more than one master.
func checkSharedQuota(t *testing.T, u string, cluster *testenv.RedisCluster, keys []string) {
	t.Helper()
	prefix := "civicgate:rl" + testenv.RandomSuffix(6) + ":"
	a := engineLimiter(t, u, prefix, 0.02, nil)
	b := engineLimiter(t, u, prefix, 0.02, nil)
	rates := []contract.Rate{{Quota: 600, Window: time.Minute}, {Quota: 20000, Window: time.Hour}} // lease 12
	if cluster != nil {
		checkOneSlotPerKey(t, cluster, oneRate(a, rates...), prefix, keys)
	}
	admitted := make([]atomic.Int64, len(keys))
	var wg sync.WaitGroup
	for _, l := range []*limiter{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 250 * len(keys) {
				k := i % len(keys)
				d, err := take1(context.Background(), l, keys[k], rates...)
				if err != nil {
					t.Error(err)
					return
				}
				admitted[k].Add(d.granted)
			}
		}()
	}
	wg.Wait()
	if n := storeErrors(a) + storeErrors(b); n != 0 {
		t.Fatalf("%v store errors (decisions fell back to local counting)", n)
	}
	for k, key := range keys {
		if got := admitted[k].Load(); got > 600 || got < 570 {
			t.Errorf("key %q: admitted %d of 1000, want 570…600 (the shared quota of 600, less ≤ one lease per instance)", key, got)
		}
	}
}
