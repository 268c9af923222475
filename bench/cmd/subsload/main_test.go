package main

import (
	"io"
	"strings"
	"testing"
)

func TestParseShapes(t *testing.T) {
	cfg, err := parse([]string{"--target", "direct=ws://127.0.0.1:1/graphql", "--target", "plain=ws://127.0.0.1:2/graphql",
		"--baseline", "plain", "--shapes", "single=1x1:200, 50x100,fanout=5000x1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := []shape{{"single", 1, 1, 200}, {"", 50, 100, 0}, {"fanout", 5000, 1, 0}}
	if len(cfg.shapes) != len(want) {
		t.Fatalf("shapes %v, want %v", cfg.shapes, want)
	}
	for i := range want {
		if cfg.shapes[i] != want[i] {
			t.Errorf("shape %d = %+v, want %+v", i, cfg.shapes[i], want[i])
		}
	}
	if cfg.baseline != "plain" {
		t.Errorf("baseline %q, want plain", cfg.baseline)
	}
	for _, bad := range []string{"1x", "x1", "0x1", "a=1x1:0", "1x1:x", "10"} {
		_, err := parse([]string{"--target", "d=ws://x/graphql", "--shapes", bad}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--shapes") {
			t.Errorf("--shapes %q: err %v, want a --shapes error", bad, err)
		}
	}
	if _, err := parse([]string{"--target", "d=ws://x/graphql", "--baseline", "nope"}, io.Discard); err == nil {
		t.Error("--baseline of no target: no error")
	}
}

// TestNextRecordsEachSubscriptionOnce: receipts land in the subscription's
// slot (socket×subs + id), a second receipt of an event is refused, warm-up
// events count apart.
func TestNextRecordsEachSubscriptionOnce(t *testing.T) {
	b := newBench(shape{sockets: 2, subs: 3}, 2)
	frame := func(id, loan string) *envelope {
		return &envelope{ID: id, Type: "next",
			Payload: []byte(`{"data":{"loanEvents":{"kind":"BORROWED","loan":{"id":"` + loan + `","due":"2026-12-01"}}}}`)}
	}
	if !b.next(1, frame("2", "ev-1"), 42) {
		t.Fatal("event 1 to socket 1 subscription 2 not recorded")
	}
	if got := b.recv[1*6+1*3+2].Load(); got != 42 {
		t.Errorf("slot holds %d, want 42", got)
	}
	if b.next(1, frame("2", "ev-1"), 43) {
		t.Error("a second receipt of the same event was recorded")
	}
	if b.next(0, frame("3", "ev-0"), 1) || b.next(0, frame("x", "ev-0"), 1) || b.next(0, frame("0", "ev-2"), 1) {
		t.Error("an out-of-range subscription id or event was recorded")
	}
	spaced := &envelope{ID: "1", Type: "next", Payload: []byte(`{"data": {"loanEvents": {"loan": {"id": "ev-0"}}}}`)}
	if !b.next(0, spaced, 7) || b.recv[1].Load() != 7 {
		t.Error("a re-encoded payload (spaces after colons) was not recorded")
	}
	if !b.next(0, frame("0", "warm-4"), 5) || b.warmGot[4].Load() != 1 {
		t.Error("a warm-up receipt was not counted")
	}
	if b.n.Load() != 2 || b.got[1].Load() != 1 || b.got[0].Load() != 1 {
		t.Errorf("n %d got %d/%d, want 2 and 1/1", b.n.Load(), b.got[0].Load(), b.got[1].Load())
	}
}
