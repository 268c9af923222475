package ratelimit

import (
	"testing"
	"time"
)

// TestGCRABurstThenSteady: a fresh key spends its whole quota at once, is then
// refused with the exact time to the next token, and earns one token per
// window/quota; refusals do not move the state.
func TestGCRABurstThenSteady(t *testing.T) {
	const interval, quota = 1_000_000, 5 // 5 per 5 s
	now := int64(1_000_000_000)
	tat := int64(0)
	for i := int64(1); i <= quota; i++ {
		var d decision
		tat, d = gcra(tat, now, interval, quota, 1)
		if d.granted != 1 || d.remaining != quota-i || d.resetAfter != i*interval {
			t.Fatalf("request %d: %+v", i, d)
		}
		if (i == quota) != (d.retryAfter > 0) {
			t.Fatalf("request %d retryAfter %d", i, d.retryAfter)
		}
	}
	before := tat
	tat, d := gcra(tat, now+250_000, interval, quota, 1)
	if d.granted != 0 || d.retryAfter != 750_000 || tat != before || d.resetAfter != 5*interval-250_000 {
		t.Fatalf("refusal: %+v tat moved %d", d, tat-before)
	}
	if _, d := gcra(tat, now+999_999, interval, quota, 1); d.granted != 0 || d.retryAfter != 1 {
		t.Fatalf("1µs early: %+v", d)
	}
	tat, d = gcra(tat, now+interval, interval, quota, 1)
	if d.granted != 1 || d.remaining != 0 {
		t.Fatalf("after retry: %+v", d)
	}
	// idle for a long time: back to a full quota, never more
	_, d = gcra(tat, now+100*interval, interval, quota, 100)
	if d.granted != quota || d.remaining != 0 {
		t.Fatalf("after idle: %+v", d)
	}
}

func TestGCRALeaseTakesWhatIsLeft(t *testing.T) {
	tat, d := gcra(0, 0, 10, 7, 5)
	if d.granted != 5 || d.remaining != 2 {
		t.Fatalf("first lease %+v", d)
	}
	_, d = gcra(tat, 0, 10, 7, 5)
	if d.granted != 2 || d.remaining != 0 {
		t.Fatalf("second lease %+v", d)
	}
}

func TestMemoryStoreBounded(t *testing.T) {
	m := newMemoryStore(shardCount * 4)
	for i := 0; i < 10_000; i++ {
		m.take(string(rune('a'+i%26))+time.Duration(i).String(), int64(i), 1_000_000, 10, 1)
	}
	if n := m.len(); n > shardCount*4 {
		t.Fatalf("%d keys held, bound %d", n, shardCount*4)
	}
	// idle keys are dropped first: a key busy now survives a flood of others
	m = newMemoryStore(shardCount * 8)
	for i := 0; i < 3; i++ {
		m.take("busy", 0, 1_000_000_000, 10, 1)
	}
	for i := 0; i < 1000; i++ {
		m.take(time.Duration(i).String(), 2_000_000_000+int64(i)*10, 1, 10, 1) // idle 1µs later
	}
	if d := m.take("busy", 0, 1_000_000_000, 10, 1); d.remaining != 6 {
		t.Fatalf("busy key lost its state: %+v", d)
	}
}

func TestBreaker(t *testing.T) {
	b := breaker{threshold: 3, cooldown: time.Second}
	now := time.Unix(100, 0)
	for range 2 {
		if b.failure(now) || !b.allow(now) {
			t.Fatal("opened before threshold")
		}
	}
	if !b.failure(now) {
		t.Fatal("third failure did not open (or not reported once)")
	}
	if b.allow(now.Add(999 * time.Millisecond)) {
		t.Fatal("open breaker allowed a call")
	}
	later := now.Add(time.Second)
	if !b.allow(later) || b.allow(later) {
		t.Fatal("want exactly one half-open probe")
	}
	if b.failure(later) {
		t.Fatal("failed probe reported as a new outage")
	}
	if b.allow(later.Add(500 * time.Millisecond)) {
		t.Fatal("failed probe did not reopen")
	}
	if !b.allow(later.Add(time.Second)) || !b.success() || !b.allow(later) {
		t.Fatal("successful probe did not close")
	}
}

func TestSFString(t *testing.T) {
	for in, want := range map[string]string{"": `"default"`, "free": `"free"`, `a"b\c`: `"a\"b\\c"`, "x\ny\u00e9": `"xy"`} {
		if got := sfString(in); got != want {
			t.Errorf("sfString(%q) = %s, want %s", in, got, want)
		}
	}
}
