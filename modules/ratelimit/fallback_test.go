package ratelimit

import (
	"strconv"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/contract"
)

// fallbackLimiter is a limiter in on_store_error local whose decisions are
// made by fallback directly: what a failed or slow Redis call leads to.
func fallbackLimiter(t *testing.T) *limiter {
	t.Helper()
	l := newLimiter(limiterConfig{prefix: "rl:", timeout: 50 * time.Millisecond, mode: modeLocal, share: 0.02,
		failures: 3, cooldown: time.Second, maxKeys: 1000})
	t.Cleanup(func() { _ = l.Destruct() })
	return l
}

// answered records a Redis answer for storeKey at sent (µs): granted units,
// and per policy the remaining and µs until the quota is whole again.
func answered(l *limiter, storeKey string, sent, granted int64, remaining, resetAfter []int64) {
	d := decision{granted: granted, n: len(remaining), seq: 1}
	if granted == 0 {
		d.retryAfter = resetAfter[0]
	}
	copy(d.remaining[:], remaining)
	copy(d.resetAfter[:], resetAfter)
	l.local.record(storeKey, sent, 1, d, 0, 0)
}

// admittedInFallback counts the units fallback admits at now for need each,
// until it refuses, and returns that refusal.
func admittedInFallback(t *testing.T, l *limiter, set *policySet, storeKey string, now, need int64) (int, decision) {
	t.Helper()
	for n := 0; n <= 100; n++ {
		d, err := l.fallback(storeKey, now, set, need)
		if err != nil || !d.fallback {
			t.Fatalf("fallback: %+v %v", d, err)
		}
		if d.granted == 0 {
			return n, d
		}
	}
	t.Fatal("fallback admitted more than 100")
	return 0, decision{}
}

// TestFallbackStartsFromRedisReport (docs/design.md D63): the on_store_error
// local decision starts from what Redis last reported for the key. Reported
// 0 remaining: refused until the reported reset, with that Retry-After, then
// the whole quota; reported r: r, then refused until the reset; never
// answered: the whole quota, as before.
func TestFallbackStartsFromRedisReport(t *testing.T) {
	l := fallbackLimiter(t)
	set := oneRate(l, contract.Rate{Quota: 5, Window: time.Minute})
	sec := time.Second.Microseconds()
	now := 1_000 * sec

	spent := set.prefix + "spent"
	answered(l, spent, now, 1, []int64{0}, []int64{40 * sec})
	if n, d := admittedInFallback(t, l, set, spent, now+sec, 1); n != 0 || d.retryAfter != 39*sec || d.remaining[0] != 0 {
		t.Fatalf("reported 0 remaining: %d admitted, then %+v; want none, retry 39 s", n, d)
	}
	if n, _ := admittedInFallback(t, l, set, spent, now+40*sec, 1); n != 5 {
		t.Fatalf("at the reported reset: %d admitted, want the quota (5)", n)
	}

	two := set.prefix + "two"
	answered(l, two, now, 1, []int64{2}, []int64{60 * sec})
	if n, d := admittedInFallback(t, l, set, two, now+sec, 1); n != 2 || d.retryAfter != 59*sec {
		t.Fatalf("reported 2 remaining: %d admitted, then %+v; want 2, retry 59 s", n, d)
	}

	refused := set.prefix + "refused" // Redis' last word a refusal
	answered(l, refused, now, 0, []int64{0}, []int64{30 * sec})
	if n, d := admittedInFallback(t, l, set, refused, now+sec, 1); n != 0 || d.retryAfter != 29*sec {
		t.Fatalf("reported a refusal: %d admitted, then %+v; want none, retry 29 s", n, d)
	}

	if n, _ := admittedInFallback(t, l, set, set.prefix+"never", now, 1); n != 5 {
		t.Fatalf("never answered: %d admitted, want the quota (5)", n)
	}
}

// TestFallbackCountsLocalAdmissionsToo: units this gateway admitted in
// memory (Redis never saw them) count on top of Redis' report, each leaving
// the window at its own time: the retry is the earliest that frees a unit.
func TestFallbackCountsLocalAdmissionsToo(t *testing.T) {
	l := fallbackLimiter(t)
	set := oneRate(l, contract.Rate{Quota: 5, Window: time.Minute})
	sec := time.Second.Microseconds()
	key := set.prefix + "k"
	t0 := 1_000 * sec
	if d, _ := l.fallback(key, t0, set, 1); d.granted != 1 { // an outage before Redis ever answered
		t.Fatalf("first local admission: %+v", d)
	}
	answered(l, key, t0+10*sec, 1, []int64{2}, []int64{60 * sec}) // Redis: 3 counted, whole at t0+70 s
	n, d := admittedInFallback(t, l, set, key, t0+20*sec, 1)
	if n != 1 || d.retryAfter != 40*sec {
		// 1 local + 3 reported + 1 = 5; the local unit of t0 leaves first, at t0+60 s
		t.Fatalf("%d admitted, then %+v; want 1, retry 40 s", n, d)
	}
}

// TestFallbackCostBudget: a cost budget shares the path: the points Redis
// last reported left are what the gateway spends alone, all or nothing.
func TestFallbackCostBudget(t *testing.T) {
	l := fallbackLimiter(t)
	set := newPolicySet("t", "cost", []contract.Rate{{Quota: 1000, Window: time.Hour}}, l.share, l.maxLease)
	sec := time.Second.Microseconds()
	key := set.prefix + "k"
	now := 1_000 * sec
	answered(l, key, now, 300, []int64{100}, []int64{3000 * sec})
	if d, _ := l.fallback(key, now+sec, set, 80); d.granted != 80 || d.remaining[0] != 20 {
		t.Fatalf("80 of the 100 points left: %+v", d)
	}
	if d, _ := l.fallback(key, now+sec, set, 30); d.granted != 0 || d.retryAfter != 2999*sec {
		t.Fatalf("30 points with 20 left: %+v; want refused until the reported reset", d)
	}
}

// TestReportKeptForEveryAnswer: the lease cache keeps Redis' latest answer
// for a key whose answers lease nothing and refuse nothing (a quota under
// 100 at lease 0.02), in its bounded shards, and forgets it at eviction: the
// key then starts as one Redis never answered for.
func TestReportKeptForEveryAnswer(t *testing.T) {
	c := newLeaseCache(shardCount) // one entry per shard
	rates := []contract.Rate{{Quota: 5, Window: time.Minute}}
	c.record("a", 10, 1, decision{granted: 1, n: 1, remaining: [maxRates]int64{0}, resetAfter: [maxRates]int64{60}, seq: 5}, 0, 0)
	var r lastReport
	c.lastReport("a", rates, &r)
	if r.n != 1 || r.used[0] != 5 || r.until[0] != 70 {
		t.Fatalf("report %+v, want 5 used until 70", r)
	}
	// A lower sequence number (the key expired in Redis and started again)
	// replaces the answer kept once that answer has passed its reset.
	c.record("a", 80, 1, decision{granted: 1, n: 1, remaining: [maxRates]int64{4}, resetAfter: [maxRates]int64{60}, seq: 1}, 0, 0)
	r = lastReport{}
	c.lastReport("a", rates, &r)
	if r.used[0] != 1 || r.until[0] != 140 {
		t.Fatalf("after the key started again in Redis: %+v, want 1 used until 140", r)
	}
	sh := c.shard("a")
	for i := 0; ; i++ { // another key of a's shard, recorded once a's answer has passed
		if k := "k" + strconv.Itoa(i); c.shard(k) == sh {
			c.record(k, 200, 1, decision{granted: 1, n: 1, remaining: [maxRates]int64{4}, resetAfter: [maxRates]int64{60}, seq: 1}, 0, 0)
			break
		}
	}
	if len(sh.entries) != 1 {
		t.Fatalf("%d entries in a shard bounded to 1", len(sh.entries))
	}
	r = lastReport{}
	c.lastReport("a", rates, &r)
	if r.n != 0 {
		t.Fatalf("evicted, a still reports %+v", r)
	}
}
