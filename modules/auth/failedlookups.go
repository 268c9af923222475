package auth

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/civicgate/civicgate/internal/boundedlru"
	"github.com/civicgate/civicgate/modules/contract"
)

// failLimiter limits, per client address, the store lookups of keys that turn
// out unknown (GCRA: a burst of N, then one more every window/N). Its table of
// addresses is bounded; the least recently seen address is dropped first, and
// a new address takes over its slot (no allocation under a flood).
type failLimiter struct {
	interval  int64 // ns: window / N
	tolerance int64 // ns: (N-1) × interval, so N in a row pass

	mu sync.Mutex
	// tats holds each address's GCRA theoretical arrival time (unix ns),
	// most recently seen first. Guarded by mu.
	tats *boundedlru.LRU[netip.Addr, int64]
}

// newFailLimiter returns the limiter for a failed_lookups value ("" is the
// default, "off" is none) tracking at most clients addresses.
func newFailLimiter(rate string, clients int) (*failLimiter, error) {
	switch rate {
	case "off":
		return nil, nil
	case "":
		rate = DefaultFailedLookups
	}
	r, err := contract.ParseRate(rate)
	if err != nil {
		return nil, fmt.Errorf("failed_lookups: %w", err)
	}
	interval := int64(r.Window) / r.Quota
	return &failLimiter{
		interval: interval, tolerance: (r.Quota - 1) * interval,
		tats: boundedlru.New(boundedlru.Options[netip.Addr, int64]{MaxLen: clients}),
	}, nil
}

// reserve counts one failed lookup for addr ahead of the lookup, unless addr
// is over its limit: then it returns how long until one is allowed again.
// A lookup that did not fail gives its reservation back with refund, so
// concurrent requests cannot all pass the check before any failure is
// counted.
func (l *failLimiter) reserve(addr netip.Addr, now time.Time) (wait time.Duration, ok bool) {
	t := now.UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	tat, _ := l.tats.Get(addr) // seen: now the most recent (an unseen address passes)
	tat = max(tat, t)
	if tat-t > l.tolerance {
		return time.Duration(tat - t - l.tolerance), false
	}
	l.tats.Put(addr, tat+l.interval)
	return 0, true
}

// refund gives back a reservation whose lookup did not fail. It is no new
// sighting of addr: its recency stays.
func (l *failLimiter) refund(addr netip.Addr) {
	l.mu.Lock()
	if tat, ok := l.tats.Peek(addr); ok {
		l.tats.Update(addr, tat-l.interval)
	}
	l.mu.Unlock()
}

// clientAddr is the address failed lookups are counted under: Caddy's client
// IP (which honours the server's trusted_proxies), IPv4 as is, IPv6 by its /64
// (one host's usual allocation). Outside a Caddy server, RemoteAddr's host.
// Addresses that do not parse share the zero address.
func clientAddr(r *http.Request) netip.Addr {
	s, _ := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string)
	if s == "" {
		s, _, _ = net.SplitHostPort(r.RemoteAddr)
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}
	}
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}
