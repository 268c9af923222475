package gqlguard

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/civicgate/civicgate/internal/collectors"
)

// Request outcomes (the "outcome" label; a fixed, low-cardinality set).
const (
	outcomeAllowed          = "allowed"
	outcomeMethod           = "method_not_allowed"
	outcomeMediaType        = "unsupported_media_type"
	outcomeTooLarge         = "body_too_large"
	outcomeBadRequest       = "bad_request"
	outcomeBodyTimeout      = "body_timeout"
	outcomeBearer           = "bearer_in_request"
	outcomeParseFailed      = "parse_failed"
	outcomeValidationFailed = "validation_failed"
	outcomeOperation        = "operation_not_allowed"
	outcomeIntrospection    = "introspection_disabled"
	// introspection answered from the caller's schema view, and refused
	// for mixing it with other root fields (introspection.go)
	outcomeIntrospectionAnswered = "introspection_answered"
	outcomeIntrospectionMixed    = "introspection_mixed"
	outcomeLimit                 = "limit_exceeded"
	outcomeNotEntitled           = "not_entitled"
	outcomeInternal              = "internal_error"
	outcomeUntrusted             = "untrusted_document"
	outcomePersistedMissing      = "persisted_query_not_found"
	outcomeSubscriptionCap       = "subscription_limit"
)

type guardMetrics struct {
	requests  *prometheus.CounterVec // outcome
	allowed   prometheus.Counter     // requests{outcome="allowed"}, resolved once
	measured  *prometheus.CounterVec // limit
	cacheHits prometheus.Counter
	cacheMiss prometheus.Counter
	// coordinatesDropped counts the schema coordinates over
	// analysis.MaxCoordinates left out of compiled operations' shapes.
	coordinatesDropped prometheus.Counter
}

// newGuardMetrics registers the guard's collectors in reg, reusing the
// collectors another graphql_guard of the same config registered already.
func newGuardMetrics(reg prometheus.Registerer) (*guardMetrics, error) {
	const ns, sub = "civicgate", "graphql_guard"
	m := &guardMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "requests_total",
			Help: "GraphQL requests seen by graphql_guard, by outcome.",
		}, []string{"outcome"}),
		measured: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "measure_only_violations_total",
			Help: "Limit violations let through by measure_only, by limit.",
		}, []string{"limit"}),
		cacheHits: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "cache_hits_total",
			Help: "Documents found in the validated-document cache.",
		}),
		cacheMiss: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "cache_misses_total",
			Help: "Documents parsed and validated (not found in the cache).",
		}),
		coordinatesDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "shape_coordinates_dropped_total",
			Help: "Schema coordinates over the per-operation cap left out of compiled operations' shapes (docs/design.md D69).",
		}),
	}
	if reg == nil {
		m.allowed = m.requests.WithLabelValues(outcomeAllowed)
		return m, nil
	}
	var err error
	if m.requests, err = collectors.Register(reg, m.requests); err != nil {
		return nil, err
	}
	if m.measured, err = collectors.Register(reg, m.measured); err != nil {
		return nil, err
	}
	if m.cacheHits, err = collectors.Register(reg, m.cacheHits); err != nil {
		return nil, err
	}
	if m.cacheMiss, err = collectors.Register(reg, m.cacheMiss); err != nil {
		return nil, err
	}
	if m.coordinatesDropped, err = collectors.Register(reg, m.coordinatesDropped); err != nil {
		return nil, err
	}
	m.allowed = m.requests.WithLabelValues(outcomeAllowed)
	return m, nil
}
