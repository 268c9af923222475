package gqlcache

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/civicgate/civicgate/internal/collectors"
)

// metrics are the cache's Prometheus collectors (no key, tag or document
// as a label).
type metrics struct {
	requests      *prometheus.CounterVec // outcome = hit | miss | bypass | stale_refused
	hits          prometheus.Counter
	misses        prometheus.Counter
	bypasses      prometheus.Counter
	staleRefused  prometheus.Counter
	stores        prometheus.Counter
	evictions     prometheus.Counter
	invalidations prometheus.Counter // tags invalidated
	flushes       prometheus.Counter
	bytes         prometheus.Gauge
	listenerUp    prometheus.Gauge
	sharedOps     *prometheus.CounterVec // result = hit | miss | rejected | stored | error | undecodable
}

// Results of shared (Redis) operations.
const (
	sharedHit         = "hit"
	sharedMiss        = "miss"
	sharedRejected    = "rejected"
	sharedStored      = "stored"
	sharedError       = "error"
	sharedUndecodable = "undecodable"
)

// shared counts a shared (Redis) operation's result.
func (m *metrics) shared(result string) { m.sharedOps.WithLabelValues(result).Inc() }

// newMetrics registers the collectors in reg (nil: unregistered), reusing
// those an earlier configuration registered (collectors.Register).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	const ns, sub = "civicgate", "graphql_cache"
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "requests_total",
		Help: "Requests seen by graphql_cache, by outcome (hit, miss, bypass, stale_refused)."}, []string{"outcome"})
	sharedOps := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "shared_total",
		Help: "Shared (Redis) cache operations, by result (hit, miss, rejected, stored, error, undecodable)."}, []string{"result"})
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help})
	}
	m := &metrics{
		stores:        counter("stores_total", "Responses stored."),
		evictions:     counter("evictions_total", "Entries evicted to stay within max_bytes."),
		invalidations: counter("invalidations_total", "Tags invalidated (change feed, notification payload or admin purge)."),
		flushes:       counter("flushes_total", "Whole-store flushes (listener lost or recovered, purge all)."),
		bytes:         gauge("bytes", "Bytes accounted to stored entries."),
		listenerUp:    gauge("listener_up", "1 while the invalidation listener is listening (or none is configured), else 0."),
	}
	if reg != nil {
		var err error
		if requests, err = collectors.Register(reg, requests); err != nil {
			return nil, err
		}
		if sharedOps, err = collectors.Register(reg, sharedOps); err != nil {
			return nil, err
		}
		for _, c := range []*prometheus.Counter{&m.stores, &m.evictions, &m.invalidations, &m.flushes} {
			if *c, err = collectors.Register(reg, *c); err != nil {
				return nil, err
			}
		}
		for _, g := range []*prometheus.Gauge{&m.bytes, &m.listenerUp} {
			if *g, err = collectors.Register(reg, *g); err != nil {
				return nil, err
			}
		}
	}
	m.requests = requests
	m.sharedOps = sharedOps
	m.hits = requests.WithLabelValues("hit")
	m.misses = requests.WithLabelValues("miss")
	m.bypasses = requests.WithLabelValues("bypass")
	m.staleRefused = requests.WithLabelValues("stale_refused")
	return m, nil
}
