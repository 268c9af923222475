package main

import (
	"log/slog"
	"runtime/debug"
)

// defaultGCPercent is the garbage collector's target recordsd serve sets when the operator has not set GOGC
// (docs/operations.md, "recordsd memory and the garbage collector"). recordsd's live heap is small (plans,
// caches, the requests in flight), so Go's default of 100 collects every few hundred pages; under load each
// cycle takes a processor for its mark phase, and that showed in the tail: the peers bench's p99 at four
// connections went from 4.0–4.2 ms to 2.8–3.0 ms at 400 (docs/benchmarks-log.md, "The garbage collector's target").
const defaultGCPercent = 400

// tuneGC applies defaultGCPercent unless GOGC is set (the runtime has applied the operator's value already) and
// returns the percent in force, -1 meaning off.
func tuneGC(getenv func(string) string) int {
	if getenv("GOGC") != "" {
		percent := debug.SetGCPercent(-1)
		debug.SetGCPercent(percent)
		return percent
	}
	debug.SetGCPercent(defaultGCPercent)
	slog.Debug("garbage collector target set; GOGC overrides it", "gogc", defaultGCPercent)
	return defaultGCPercent
}
