package auth

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/civicgate/civicgate/internal/collectors"
	"github.com/civicgate/civicgate/modules/auth/accesstoken"
)

// jwtCollector exports the token verifier's counters (accesstoken.Stats) at
// scrape time. One collector lives for the process (collectors.Register);
// each configuration load hands it its new verifier, and the old one's final
// counts are carried into a base, so the counters stay monotonic across
// reloads like every other civicgate counter. Refusals by kind are
// civicgate_auth_requests_total{outcome="token_<kind>"}.
type jwtCollector struct {
	mu   sync.Mutex
	cur  *accesstoken.Verifier
	base accesstoken.Stats

	verified, hits, waits, evictions, refreshes, refreshFailures, refreshLimited *prometheus.Desc
	keys, keysIgnored, entries, fetched                                          *prometheus.Desc
}

func newJWTCollector() *jwtCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("civicgate_auth_jwt_"+name, help, nil, nil)
	}
	return &jwtCollector{
		verified:        d("verified_total", "Access tokens admitted by a full verification (signature checked)."),
		hits:            d("cache_hits_total", "Access tokens admitted from the verification cache."),
		waits:           d("verify_waits_total", "Verifications that waited for a slot (max_concurrent were running)."),
		evictions:       d("cache_evictions_total", "Verified tokens evicted by the cache bound."),
		refreshes:       d("jwks_refreshes_total", "Successful fetches of the issuer's key set, the first included."),
		refreshFailures: d("jwks_refresh_failures_total", "Failed fetches of the key set (the last good set stayed in use)."),
		refreshLimited:  d("jwks_refreshes_rate_limited_total", "Unknown kids refused without a fetch (a fetch ran less than 10 s before)."),
		keys:            d("jwks_keys", "Usable keys in the current key set."),
		keysIgnored:     d("jwks_keys_ignored", "Keys of the current set that could not be used."),
		entries:         d("cache_entries", "Verified tokens held in the cache."),
		fetched:         d("jwks_fetched_timestamp_seconds", "When the current key set was fetched."),
	}
}

// use makes v the verifier reported; the previous one's counts join the base.
func (c *jwtCollector) use(v *accesstoken.Verifier) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != nil && c.cur != v {
		s := c.cur.Stats()
		c.base.Verified += s.Verified
		c.base.CacheHits += s.CacheHits
		c.base.VerifyWaits += s.VerifyWaits
		c.base.CacheEvictions += s.CacheEvictions
		c.base.KeySetRefreshes += s.KeySetRefreshes
		c.base.KeySetRefreshFailures += s.KeySetRefreshFailures
		c.base.KeySetRefreshesRateLimited += s.KeySetRefreshesRateLimited
	}
	c.cur = v
}

func (c *jwtCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.verified, c.hits, c.waits, c.evictions, c.refreshes, c.refreshFailures,
		c.refreshLimited, c.keys, c.keysIgnored, c.entries, c.fetched} {
		ch <- d
	}
}

func (c *jwtCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	v, b := c.cur, c.base
	c.mu.Unlock()
	var s accesstoken.Stats
	if v != nil {
		s = v.Stats()
	}
	counter := func(d *prometheus.Desc, n uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(n))
	}
	gauge := func(d *prometheus.Desc, n float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, n)
	}
	counter(c.verified, b.Verified+s.Verified)
	counter(c.hits, b.CacheHits+s.CacheHits)
	counter(c.waits, b.VerifyWaits+s.VerifyWaits)
	counter(c.evictions, b.CacheEvictions+s.CacheEvictions)
	counter(c.refreshes, b.KeySetRefreshes+s.KeySetRefreshes)
	counter(c.refreshFailures, b.KeySetRefreshFailures+s.KeySetRefreshFailures)
	counter(c.refreshLimited, b.KeySetRefreshesRateLimited+s.KeySetRefreshesRateLimited)
	gauge(c.keys, float64(s.Keys))
	gauge(c.keysIgnored, float64(s.KeysIgnored))
	gauge(c.entries, float64(s.CacheEntries))
	fetched := 0.0
	if !s.KeySetFetched.IsZero() {
		fetched = float64(s.KeySetFetched.UnixNano()) / float64(time.Second)
	}
	gauge(c.fetched, fetched)
}

// registerJWTMetrics reports v in reg's process-wide JWT collector.
func registerJWTMetrics(reg prometheus.Registerer, v *accesstoken.Verifier) error {
	if reg == nil {
		return nil
	}
	c, err := collectors.Register(reg, newJWTCollector())
	if err != nil {
		return err
	}
	c.use(v)
	return nil
}
