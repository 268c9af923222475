package main

import (
	"runtime/debug"
	"testing"
)

func TestTuneGCKeepsTheOperatorsGOGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOGC" {
				return v
			}
			return ""
		}
	}
	if got := tuneGC(env("")); got != defaultGCPercent {
		t.Fatalf("GOGC unset: tuneGC %d, want %d", got, defaultGCPercent)
	}
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Fatalf("GOGC unset: the runtime's percent is %d, want %d", got, defaultGCPercent)
	}
	// The runtime read GOGC=150 at start (here: set by hand); tuneGC leaves it.
	debug.SetGCPercent(150)
	if got := tuneGC(env("150")); got != 150 {
		t.Fatalf("GOGC=150: tuneGC %d, want 150", got)
	}
	if got := debug.SetGCPercent(100); got != 150 {
		t.Fatalf("GOGC=150: the runtime's percent is %d, want it left at 150", got)
	}
}
