package auth

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

// changingStore is an in-memory store whose records the test changes, and
// which counts lookups per hash.
type changingStore struct {
	mu      sync.Mutex
	recs    map[keystore.Hash]keystore.Record
	lookups map[keystore.Hash]int
}

func (s *changingStore) lookup(_ context.Context, h keystore.Hash) (keystore.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lookups[h]++
	r, ok := s.recs[h]
	if !ok {
		return keystore.Record{}, keystore.ErrNotFound
	}
	return r, nil
}

func (s *changingStore) set(h keystore.Hash, mutate func(*keystore.Record)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.recs[h]
	mutate(&r)
	s.recs[h] = r
}

// TestRecheckManyWatchesFewKeys: 5 000 watches on five keys cost five
// lookups per round; each key's change fires exactly its own watches with
// its own reason, and the gauge follows.
func TestRecheckManyWatchesFewKeys(t *testing.T) {
	m, err := newAuthMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	st := &changingStore{recs: map[keystore.Hash]keystore.Record{}, lookups: map[keystore.Hash]int{}}
	a := &App{Environment: "live", timeout: time.Second, store: st, logger: zap.NewNop(), metrics: m, cache: newKeyCache(10, 10, time.Second, time.Second),
		watches: newWatchRegistry(m.watches), watchInterval: time.Second, recheckFlight: new(singleflight.Group)}
	var hs []keystore.Hash
	for i := range 5 {
		h := keystore.HashKey(fmt.Sprintf("key-%d", i))
		hs = append(hs, h)
		st.recs[h] = keystore.Record{KeyID: fmt.Sprint("key_", i), OrgID: fmt.Sprint("org_", i), OrgStatus: keystore.OrgActive,
			Env: "live", Tier: "free", Status: keystore.StatusActive}
	}
	watches := make(map[keystore.Hash][]contract.CredentialWatch)
	for i := range 5000 {
		h := hs[i%len(hs)]
		e := a.newEntry(h, st.recs[h], time.Now())
		watches[h] = append(watches[h], e.WatchCredential())
	}
	if got := gaugeValue(t, m.watches); got != 5000 {
		t.Fatalf("gauge %v, want 5000", got)
	}

	if failed, err := a.recheck(context.Background(), a.watches.due(true)); failed != 0 {
		t.Fatal(err)
	}
	for _, h := range hs {
		if st.lookups[h] != 1 {
			t.Fatalf("%d lookups of one key in a round, want 1", st.lookups[h])
		}
	}
	if n, _ := a.watches.size(); n != 5000 {
		t.Fatalf("%d watches open after a round on active keys", n)
	}

	changes := []struct {
		mutate func(*keystore.Record)
		want   string
	}{
		{func(r *keystore.Record) { r.Status = keystore.StatusRevoked }, contract.MsgKeyRevoked},
		{func(r *keystore.Record) { r.Status = keystore.StatusRotated }, contract.MsgKeyRotated},
		{func(r *keystore.Record) { r.OrgStatus = keystore.OrgSuspended }, contract.MsgOrgSuspended},
		{func(r *keystore.Record) { r.Env = "test" }, contract.MsgWrongEnvironment},
	}
	for i, c := range changes {
		st.set(hs[i], c.mutate)
	}
	st.mu.Lock()
	delete(st.recs, hs[4]) // the key is gone
	st.mu.Unlock()
	// The notifications a LISTEN worker would pass on: one key, one
	// organization, and a flush (which covers the rest).
	a.invalidate("key:" + hs[0].String())
	a.invalidate("org:org_2")
	if got := a.watches.due(false); len(got) != 2 {
		t.Fatalf("%d keys due after two notifications, want 2", len(got))
	}
	a.invalidate("flush")
	if failed, err := a.recheck(context.Background(), a.watches.due(false)); failed != 0 {
		t.Fatal(err)
	}
	wants := []string{contract.MsgKeyRevoked, contract.MsgKeyRotated, contract.MsgOrgSuspended, contract.MsgWrongEnvironment, contract.MsgInvalidKey}
	for i, h := range hs {
		for _, w := range watches[h] {
			select {
			case <-w.Done():
			default:
				t.Fatalf("key %d: a watch did not fire", i)
			}
			if w.Reason() != wants[i] {
				t.Fatalf("key %d: Reason %q, want %q", i, w.Reason(), wants[i])
			}
			w.Stop() // after firing: keeps the reason, changes nothing
			if w.Reason() != wants[i] {
				t.Fatalf("key %d: Stop after firing cleared the reason", i)
			}
		}
	}
	if n, keys := a.watches.size(); n != 0 || keys != 0 {
		t.Fatalf("%d watches of %d keys left", n, keys)
	}
	if got := gaugeValue(t, m.watches); got != 0 {
		t.Fatalf("gauge %v, want 0", got)
	}
}

// TestDetachedWatch: an entry of an app without a registry (built by hand)
// still gives a watch that Stop ends.
func TestDetachedWatch(t *testing.T) {
	w := (&resolvedKey{found: true}).WatchCredential()
	w.Stop()
	w.Stop()
	<-w.Done()
	if w.Reason() != "" {
		t.Fatalf("Reason %q", w.Reason())
	}
}

func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}
