package ratelimit

import (
	"github.com/civicgate/civicgate/modules/contract"
	"testing"
	"time"
)

func TestMemoryStoreBounded(t *testing.T) {
	tenPerSecond := []contract.Rate{{Quota: 10, Window: time.Second}}
	m := newMemoryStore(shardCount * 4)
	for i := 0; i < 10_000; i++ {
		m.take(string(rune('a'+i%26))+time.Duration(i).String(), int64(i), tenPerSecond, 1, 1, nil)
	}
	if n := m.len(); n > shardCount*4 {
		t.Fatalf("%d keys held, bound %d", n, shardCount*4)
	}
	// idle keys are dropped first: a key busy now survives a flood of others
	m = newMemoryStore(shardCount * 8)
	slow := []contract.Rate{{Quota: 10, Window: 10_000 * time.Second}}
	blink := []contract.Rate{{Quota: 1, Window: time.Microsecond}}
	for i := 0; i < 3; i++ {
		m.take("busy", 0, slow, 1, 1, nil)
	}
	for i := 0; i < 1000; i++ {
		m.take(time.Duration(i).String(), 2_000_000_000+int64(i)*10, blink, 1, 1, nil) // idle 2 µs later
	}
	if d := m.take("busy", 0, slow, 1, 1, nil); d.remaining[0] != 6 {
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
