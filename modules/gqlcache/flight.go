package gqlcache

import (
	"context"
	"sync"
)

// flight is one upstream request that identical misses wait for.
type flight struct {
	done    chan struct{}
	entry   *entry // what the leader stored; nil if it stored nothing
	waiters int    // misses waiting for it, guarded by flights.mu
}

// flights collapses identical concurrent misses: the first is the leader
// and goes upstream; the others wait for what it stored.
type flights struct {
	mu     sync.Mutex
	m      map[cacheKey]*flight
	joined func() // called when a miss waits for a leader (the instance's signal)
}

// join returns the flight under key and whether the caller leads it (and
// must call land).
func (g *flights) join(key cacheKey) (*flight, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f := g.m[key]; f != nil {
		f.waiters++
		if g.joined != nil {
			g.joined()
		}
		return f, false
	}
	if g.m == nil {
		g.m = map[cacheKey]*flight{}
	}
	f := &flight{done: make(chan struct{})}
	g.m[key] = f
	return f, true
}

// land ends the leader's flight with what it stored (nil: nothing).
func (g *flights) land(key cacheKey, f *flight, e *entry) {
	g.mu.Lock()
	delete(g.m, key)
	g.mu.Unlock()
	f.entry = e
	close(f.done)
}

// wait returns the leader's entry (nil if it stored nothing), or nil when
// ctx ends first.
func (f *flight) wait(ctx context.Context) *entry {
	select {
	case <-f.done:
		return f.entry
	case <-ctx.Done():
		return nil
	}
}

// waiting is the number of misses waiting for a leader.
func (g *flights) waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, f := range g.m {
		n += f.waiters
	}
	return n
}
