package auth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// flakyStore is a pure-unit stand-in for the store: it counts lookups and
// fails while down.
type flakyStore struct {
	recs  map[keystore.Hash]keystore.Record
	down  bool
	calls int
}

func (s *flakyStore) lookup(_ context.Context, h keystore.Hash) (keystore.Record, error) {
	s.calls++
	if s.down {
		return keystore.Record{}, errors.New("connection refused")
	}
	r, ok := s.recs[h]
	if !ok {
		return keystore.Record{}, keystore.ErrNotFound
	}
	return r, nil
}

func TestResolveCacheAndStaleServing(t *testing.T) {
	known, unknown := keystore.HashKey("known"), keystore.HashKey("unknown")
	st := &flakyStore{recs: map[keystore.Hash]keystore.Record{known: {KeyID: "key_1", Status: "active", Tier: "free"}}}
	const ttl = time.Second
	a := &App{timeout: time.Second, cache: newKeyCache(10, 10, ttl, ttl/2), flight: new(singleflight.Group), store: st, logger: zap.NewNop(),
		tiers: map[string]*tierPolicy{"free": {name: "free"}}}
	ctx := context.Background()
	t0 := time.Unix(1_800_000_000, 0)

	e, _, err := a.resolve(ctx, known, t0)
	if err != nil || !e.found || e.tier == nil || st.calls != 1 {
		t.Fatalf("first lookup: %+v %v calls=%d", e, err, st.calls)
	}
	if _, _, err := a.resolve(ctx, known, t0.Add(ttl/2)); err != nil || st.calls != 1 {
		t.Fatalf("fresh entry went to the store: calls=%d", st.calls)
	}
	if e, _, _ := a.resolve(ctx, unknown, t0); e.found || st.calls != 2 {
		t.Fatal("unknown hash")
	}
	if e, _, _ := a.resolve(ctx, unknown, t0.Add(ttl/4)); e.found || st.calls != 2 {
		t.Fatal("negative entry not cached")
	}

	st.down = true
	t1 := t0.Add(2 * ttl)
	if e, _, err := a.resolve(ctx, known, t1); err != nil || !e.found || st.calls != 3 {
		t.Fatalf("stale entry not served while the store is down: %v calls=%d", err, st.calls)
	}
	if _, _, err := a.resolve(ctx, known, t1.Add(ttl/2)); err != nil || st.calls != 3 {
		t.Fatalf("store asked again before the stale window ended: calls=%d", st.calls)
	}
	if _, _, err := a.resolve(ctx, known, t1.Add(2*ttl)); err != nil || st.calls != 4 {
		t.Fatalf("store not retried after the stale window: calls=%d", st.calls)
	}
	if _, _, err := a.resolve(ctx, unknown, t1); !errors.Is(err, errStore) {
		t.Fatalf("unknown key with the store down: %v", err)
	}
	if _, _, err := a.resolve(ctx, keystore.HashKey("never seen"), t1); !errors.Is(err, errStore) {
		t.Fatalf("uncached key with the store down: %v", err)
	}

	st.down = false
	a.invalidate("key:" + known.String())
	if e, _, err := a.resolve(ctx, known, t1.Add(2*ttl+time.Millisecond)); err != nil || !e.found || st.calls != 7 { // 4 + two failed lookups of uncached keys + this one
		t.Fatalf("after invalidation: %v calls=%d", err, st.calls)
	}
	a.invalidate("org:" + e.rec.OrgID) // OrgID "" matches the test record
	if a.cache.get(known) != nil {
		t.Fatal("org invalidation kept the entry")
	}
}

func TestCacheBounded(t *testing.T) {
	c := newKeyCache(3, 2, time.Second, time.Second)
	for i := 0; i < 10; i++ {
		c.put(keystore.HashKey(string(rune('a'+i))), &resolvedKey{found: true})
		c.put(keystore.HashKey(string(rune('A'+i))), &resolvedKey{})
	}
	if known, unknown := c.sizes(); known != 3 || unknown != 2 {
		t.Fatalf("cache holds %d known and %d unknown entries, bounds 3 and 2", known, unknown)
	}
}

func TestMetricsSurviveReload(t *testing.T) {
	reg := prometheus.NewRegistry()
	m1, err := newAuthMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := newAuthMetrics(reg) // a second config load registers again
	if err != nil {
		t.Fatal(err)
	}
	// The collectors live for the process (internal/collectors), so other
	// tests may have counted already: what is checked is the increase.
	var mt dto.Metric
	_ = m1.requests[outcomeOK].Write(&mt)
	okBefore := mt.GetCounter().GetValue()
	_ = m1.watches.Write(&mt)
	watchesBefore := mt.GetGauge().GetValue()
	m1.inc(outcomeOK)
	m2.inc(outcomeOK)
	m2.inc(outcomeRevoked)
	if err := m1.requests[outcomeOK].Write(&mt); err != nil || mt.GetCounter().GetValue() != okBefore+2 {
		t.Fatalf("ok = %v (%v), want +2 (shared collector)", mt.GetCounter().GetValue()-okBefore, err)
	}
	m1.watches.Inc() // an exchange of the old config still open
	m2.watches.Inc()
	defer m1.watches.Sub(2)
	families, err := reg.Gather()
	if err != nil || len(families) != 3 || families[0].GetName() != "civicgate_auth_credential_watches" ||
		families[0].GetMetric()[0].GetGauge().GetValue() != watchesBefore+2 ||
		families[1].GetName() != "civicgate_auth_requests_total" || len(families[1].GetMetric()) != len(outcomes) ||
		families[2].GetName() != "civicgate_auth_token_denials_set_aside" {
		t.Fatalf("gathered %v %v", families, err)
	}
}
