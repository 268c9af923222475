package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/contract"
)

var perMinute100 = contract.Rate{Quota: 100, Window: time.Minute}

// clockedLimiters are the stores the window tests run on with a fake clock:
// memory, and real Redis with the clock sent to the script (leasing off and
// on). Each Redis one gets its own key prefix.
func clockedLimiters(t *testing.T, clock *fakeClock) map[string]*limiter {
	_, prefix := testenv.Redis(t)
	out := map[string]*limiter{"memory": newLimiter(limiterConfig{mode: modeLocal, maxKeys: 1000})}
	for name, share := range map[string]float64{"redis": 0, "redis_leasing": 0.02} {
		out[name] = testLimiter(t, testenv.RedisAddr(), prefix+name+":", share)
	}
	for _, l := range out {
		l.clock = clock.time
		l.storeClock = true
	}
	return out
}

// TestWindowBurstThenRetryAfter: a fresh key spends its 100 at once, the
// 101st is refused with Retry-After until the first admitted request leaves
// the window — refused 1 µs before, admitted at it — and refusals are not
// counted.
func TestWindowBurstThenRetryAfter(t *testing.T) {
	clock := &fakeClock{now: 1_700_000_000_000_000}
	for name, l := range clockedLimiters(t, clock) {
		t.Run(name, func(t *testing.T) {
			clock.now += 10 * time.Minute.Microseconds() // a fresh start for every store
			start := clock.now
			for i := range 100 {
				d, err := take1(context.Background(), l, "k", perMinute100)
				if err != nil || d.granted != 1 || d.remaining[0] < 99-int64(i) {
					t.Fatalf("request %d: %+v %v", i+1, d, err)
				}
				clock.now += 1000 // 1 ms apart: one bucket (60 s / 64), stamped with its last request
			}
			last := clock.now - 1000
			clock.now = start + 20e6
			for range 3 {
				d, err := take1(context.Background(), l, "k", perMinute100)
				if err != nil || d.granted != 0 || d.retryAfter != last+60e6-clock.now {
					t.Fatalf("101st: %+v %v, want retry %d µs", d, err, last+60e6-clock.now)
				}
			}
			clock.now = last + 60e6 - 1
			if d, _ := take1(context.Background(), l, "k", perMinute100); d.granted != 0 || d.retryAfter != 1 {
				t.Fatalf("1 µs early: %+v", d)
			}
			clock.now = last + 60e6
			if d, _ := take1(context.Background(), l, "k", perMinute100); d.granted != 1 {
				t.Fatalf("at Retry-After: %+v", d)
			}
		})
	}
}

// TestWindowNeverOverQuota: arrival patterns over three windows — steady at
// 5/s (3× the quota), bursts, random gaps — on every store: no sliding
// window of 60 s ever holds more than 100 admitted requests, and the key
// still gets most of its quota (merging into 64 buckets holds units at most
// a bucket longer).
func TestWindowNeverOverQuota(t *testing.T) {
	patterns := map[string]func(r *rand.Rand) int64{ // µs to the next request
		"steady_5_per_s": func(*rand.Rand) int64 { return 200_000 },
		"bursts":         func(r *rand.Rand) int64 { return []int64{1, 1, 1, 1, 5_000_000}[r.IntN(5)] },
		"random":         func(r *rand.Rand) int64 { return r.Int64N(600_000) },
	}
	clock := &fakeClock{now: 1_700_000_000_000_000}
	for name, l := range clockedLimiters(t, clock) {
		for pname, gap := range patterns {
			t.Run(name+"/"+pname, func(t *testing.T) {
				clock.now += 10 * time.Minute.Microseconds()
				start := clock.now
				rng := rand.New(rand.NewPCG(1, 2))
				var admitted []int64
				for clock.now < start+3*60e6 {
					d, err := take1(context.Background(), l, "k", perMinute100)
					if err != nil {
						t.Fatal(err)
					}
					if d.granted == 1 {
						admitted = append(admitted, clock.now)
					}
					clock.now += gap(rng)
				}
				if worst := maxInWindow(admitted, 60e6); worst > 100 {
					t.Fatalf("%d admitted within one 60 s window", worst)
				}
				if pname == "steady_5_per_s" && len(admitted) < 3*100*95/100 {
					t.Fatalf("only %d admitted over three windows at 3× the quota", len(admitted))
				}
				t.Logf("%d admitted over 3 windows", len(admitted))
			})
		}
	}
}

// maxInWindow is the most stamps any half-open window [t, t+w) holds.
func maxInWindow(stamps []int64, w int64) int {
	sort.Slice(stamps, func(i, j int) bool { return stamps[i] < stamps[j] })
	worst, j := 0, 0
	for i := range stamps {
		for stamps[i]-stamps[j] >= w {
			j++
		}
		worst = max(worst, i-j+1)
	}
	return worst
}

// TestWindowSeveralPolicies: 5/s and 20/m together — a request is admitted
// only if both admit it, the refusing policy sets the retry, and a refused
// request counts against neither.
func TestWindowSeveralPolicies(t *testing.T) {
	rates := []contract.Rate{{Quota: 5, Window: time.Second}, {Quota: 20, Window: time.Minute}}
	clock := &fakeClock{now: 1_700_000_000_000_000}
	for name, l := range clockedLimiters(t, clock) {
		t.Run(name, func(t *testing.T) {
			clock.now += 10 * time.Minute.Microseconds()
			start := clock.now
			set := oneRate(l, rates...)
			take := func() decision {
				d, err := l.take(context.Background(), set, set.prefix+"k", "k", 1)
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			for sec := range 3 {
				clock.now = start + int64(sec)*1e6
				for i := range 5 {
					if d := take(); d.granted != 1 {
						t.Fatalf("second %d request %d: %+v", sec, i, d)
					}
				}
				d := take()
				if d.granted != 0 || d.retryAfter != 1e6 || set.refusing(&d, 1) != 0 {
					t.Fatalf("second %d: 6th %+v, want the per-second policy's 1 s", sec, d)
				}
				if d.remaining[1] != 20-5*int64(sec+1) {
					t.Fatalf("second %d: the minute policy has %d left: a refusal was counted", sec, d.remaining[1])
				}
			}
			clock.now = start + 3e6
			for i := range 5 {
				if d := take(); d.granted != 1 {
					t.Fatalf("second 3 request %d: %+v", i, d)
				}
			}
			if d := take(); d.granted != 0 || d.retryAfter != 57e6 || set.refusing(&d, 1) != 1 {
				t.Fatalf("minute spent: %+v, want the minute policy's 57 s", d)
			}
			clock.now = start + 5e6
			d := take()
			if d.granted != 0 || d.retryAfter != 55e6 || set.refusing(&d, 1) != 1 {
				t.Fatalf("minute spent: %+v, want the minute policy's 55 s", d)
			}
			clock.now = start + 60e6
			if d := take(); d.granted != 1 {
				t.Fatalf("next minute: %+v", d)
			}
		})
	}
}

// TestWindowUnitsAndNever: taking several units (a cost budget): all or
// nothing, the retry is when enough units have left, and more than the
// whole quota is never admitted.
func TestWindowUnitsAndNever(t *testing.T) {
	clock := &fakeClock{now: 1_700_000_000_000_000}
	for name, l := range clockedLimiters(t, clock) {
		t.Run(name, func(t *testing.T) {
			clock.now += 10 * time.Minute.Microseconds()
			start := clock.now
			set := oneRate(l, perMinute100)
			take := func(n int64) decision {
				d, err := l.take(context.Background(), set, set.prefix+"c", "c", n)
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			for i := range 3 {
				clock.now = start + int64(i)*10e6
				if d := take(30); d.granted != 30 || d.remaining[0] != 70-30*int64(i) {
					t.Fatalf("take %d: %+v", i, d)
				}
			}
			clock.now = start + 30e6
			if d := take(30); d.granted != 0 || d.retryAfter != 30e6 || d.remaining[0] != 10 {
				t.Fatalf("fourth: %+v, want 30 s (the first 30 leave at 60 s)", d)
			}
			if d := take(10); d.granted != 10 {
				t.Fatalf("10 of the 10 left: %+v", d)
			}
			if d := take(101); d.granted != 0 || d.retryAfter != -1 {
				t.Fatalf("over the whole quota: %+v, want never", d)
			}
		})
	}
}

// TestWindowScriptMatchesGo: the Lua script and the Go memory store make the
// same decisions (granted, retry, remaining, reset) for one random sequence.
func TestWindowScriptMatchesGo(t *testing.T) {
	clock := &fakeClock{now: 1_700_000_000_000_000}
	ls := clockedLimiters(t, clock)
	mem, red := ls["memory"], ls["redis"]
	rates := []contract.Rate{{Quota: 7, Window: 3 * time.Second}, {Quota: 30, Window: 20 * time.Second}}
	ms, rs := oneRate(mem, rates...), oneRate(red, rates...)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		need := int64(1 + rng.IntN(3))
		dm, _ := mem.take(context.Background(), ms, ms.prefix+"p", "p", need)
		dr, err := red.take(context.Background(), rs, rs.prefix+"p", "p", need)
		if err != nil {
			t.Fatal(err)
		}
		if dr.granted == 0 { // a refusal from the local cache keeps Redis' remaining of its time
			dr.remaining, dm.remaining = [maxRates]int64{}, [maxRates]int64{}
		}
		dr.seq = 0 // Redis' order of its answers; memory needs none
		if dm != dr {
			t.Fatalf("step %d (need %d): memory %+v, redis %+v", i, need, dm, dr)
		}
		clock.now += rng.Int64N(400_000)
	}
}

// TestLeasesNeverOverAdmitAcrossInstances: three instances on one Redis with
// leases (1000/m: 20 units a lease) at a steady 3× the quota over three
// windows: no window ever holds more than the quota, and the key gets at
// least 95 % of it per window.
func TestLeasesNeverOverAdmitAcrossInstances(t *testing.T) {
	_, prefix := testenv.Redis(t)
	clock := &fakeClock{now: 1_700_000_000_000_000}
	r := contract.Rate{Quota: 1000, Window: time.Minute}
	var ls []*limiter
	for range 3 {
		l := testLimiter(t, testenv.RedisAddr(), prefix, 0.02)
		l.clock, l.storeClock = clock.time, true
		ls = append(ls, l)
	}
	start := clock.now
	var admitted []int64
	for i := 0; clock.now < start+3*60e6; i++ {
		d, err := take1(context.Background(), ls[i%3], "shared", r)
		if err != nil {
			t.Fatal(err)
		}
		if d.granted == 1 {
			admitted = append(admitted, clock.now)
		}
		clock.now += 20_000 // 50/s = 3× 1000/m
	}
	worst := maxInWindow(admitted, 60e6)
	if worst > 1000 {
		t.Fatalf("%d admitted within one window across instances", worst)
	}
	if len(admitted) < 3*950 {
		t.Fatalf("%d admitted over three windows: leases held back too much", len(admitted))
	}
	t.Logf("%d admitted over 3 windows, busiest window %d", len(admitted), worst)
}

// TestConcurrentRenewalsKeepEveryLease: requests of one key on one instance
// that find its leases spent at the same moment each renew; every lease is
// kept and spent, so what Redis counts is exactly what was admitted plus what
// the instance still holds unspent (a lease dropped on the floor would show
// as units counted and never admitted), and renewals stay about one per
// lease of units.
func TestConcurrentRenewalsKeepEveryLease(t *testing.T) {
	client, prefix := testenv.Redis(t)
	l := testLimiter(t, testenv.RedisAddr(), prefix, 0.02)
	r := contract.Rate{Quota: 1_000_000, Window: time.Hour} // leases of 1000
	set := oneRate(l, r)
	sk := set.prefix + "hot"
	admitted := hammer(t, l, set, "hot", 8, 3000, nil)
	if admitted.Load() != 24000 {
		t.Fatalf("admitted %d of 24000 under a quota of a million", admitted.Load())
	}
	fields, err := client.HGetAll(context.Background(), set.redisKeys(prefix, "hot")[0]).Result()
	if err != nil {
		t.Fatal(err)
	}
	var counted int64
	for f, v := range fields {
		if f == "s" { // the sequence number, not an entry
			continue
		}
		parts := strings.Split(v, ":")
		n, _ := strconv.ParseInt(parts[len(parts)-1], 10, 64)
		counted += n
	}
	e := l.local.shard(sk).entries[sk]
	var held int64
	if e != nil {
		held = e.unspent(time.Now().UnixMicro()) + e.returning()
	}
	if counted != admitted.Load()+held {
		t.Fatalf("Redis counts %d, admitted %d + held unspent %d: a lease was lost", counted, admitted.Load(), held)
	}
	if calls := testutilCount(l); calls > 24000/1000*3 {
		t.Fatalf("%d round trips for 24000 requests with leases of 1000", calls)
	}
}

// TestResetShownNeverPastTheWindow: with leases open (stamped at their end
// for the decision), the reset a client is shown (RateLimit t) still counts
// from the last grant, so it never exceeds the window.
func TestResetShownNeverPastTheWindow(t *testing.T) {
	clock := &fakeClock{now: 1_700_000_000_000_000}
	l := clockedLimiters(t, clock)["redis_leasing"]
	for i := range 250 {
		d, err := take1(context.Background(), l, "t", perMinute100)
		if err != nil {
			t.Fatal(err)
		}
		if d.resetAfter[0] > 60e6 {
			t.Fatalf("request %d: reset %d µs, past the 60 s window", i, d.resetAfter[0])
		}
		clock.now += 300_000
	}
}

// TestRemainingNeverOverTheQuota: eight requests of one key renewing leases at
// once (1000/m: leases of 20) are each told a remaining below the quota, and
// once they are done the next request is told exactly what is left — the
// answers of concurrent renewals arrive in any order, and counting a lease's
// units twice once told a client r=101 of 100. The answers go through a
// proxy, whose extra hop reorders them more often; keeping the smaller of
// two answers, or the last to arrive, failed here.
func TestRemainingNeverOverTheQuota(t *testing.T) {
	_, prefix := testenv.Redis(t)
	proxy := testenv.NewProxy(t, testenv.RedisAddr())
	for round := range 40 {
		l := testLimiter(t, proxy.Addr(), fmt.Sprintf("%s%d:", prefix, round), 0.02)
		r := contract.Rate{Quota: 1000, Window: time.Minute}
		set := oneRate(l, r)
		sk := set.prefix + "k"
		admitted := hammer(t, l, set, "k", 8, 100, func(d decision) {
			if d.granted == 1 && d.remaining[0] > r.Quota-1 {
				t.Errorf("told %d remaining of %d", d.remaining[0], r.Quota)
			}
		})
		d, err := l.take(context.Background(), set, sk, "k", 1)
		if err != nil || d.granted != 1 {
			t.Fatalf("round %d: %+v %v", round, d, err)
		}
		if want := r.Quota - admitted.Load() - 1; d.remaining[0] != want {
			t.Fatalf("round %d: told %d remaining after %d admitted, want %d", round, d.remaining[0], admitted.Load()+1, want)
		}
	}
}

// hammer runs goroutines × each decisions of one unit for key under set at
// once, passing each decision to check (if any), and returns the admitted.
func hammer(t *testing.T, l *limiter, set *policySet, key string, goroutines, each int, check func(decision)) *atomic.Int64 {
	t.Helper()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				d, err := l.take(context.Background(), set, set.prefix+key, key, 1)
				if err != nil {
					t.Error(err)
					return
				}
				admitted.Add(d.granted)
				if check != nil {
					check(d)
				}
			}
		}()
	}
	wg.Wait()
	return &admitted
}

// TestRefusalWaitsForALeaseOnItsWay: two requests of one instance renew a
// fresh 10/min key at once. Redis runs the first call, which leases all ten
// units, then the second, which it refuses; the refusal's answer is handled
// while the lease's answer is still on its way. The refused request must
// wait for it and spend a leased unit, not answer 429 with nine units about
// to be spendable here (a burst of 100 on a 100/min key got 99 admitted).
func TestRefusalWaitsForALeaseOnItsWay(t *testing.T) {
	_, prefix := testenv.Redis(t)
	for round := range 5 {
		l := testLimiter(t, testenv.RedisAddr(), fmt.Sprintf("%s%d:", prefix, round), 1)
		set := oneRate(l, contract.Rate{Quota: 10, Window: time.Minute})
		if set.lease != 10 {
			t.Fatalf("lease %d, want the whole quota", set.lease)
		}
		refusalSeen := make(chan struct{})
		leaseHeld := make(chan struct{})
		l.answered = func(d decision) {
			if d.granted > 0 {
				close(leaseHeld)
				<-refusalSeen // the lease's answer arrives after the refusal's
				return
			}
			close(refusalSeen)
		}
		first := make(chan decision, 1)
		go func() {
			d, err := l.take(context.Background(), set, set.prefix+"k", "k", 1)
			if err != nil {
				t.Error(err)
			}
			first <- d
		}()
		<-leaseHeld
		second, err := l.take(context.Background(), set, set.prefix+"k", "k", 1)
		if err != nil {
			t.Fatal(err)
		}
		if d := <-first; d.granted != 1 {
			t.Fatalf("round %d: the leasing request: %+v", round, d)
		}
		if second.granted != 1 {
			t.Fatalf("round %d: refused with leased units on their way: %+v", round, second)
		}
		l.answered = nil
		admitted := 2
		for range 10 {
			d, err := l.take(context.Background(), set, set.prefix+"k", "k", 1)
			if err != nil {
				t.Fatal(err)
			}
			admitted += int(d.granted)
		}
		if admitted != 10 {
			t.Fatalf("round %d: %d of a 10/min key admitted", round, admitted)
		}
	}
}
