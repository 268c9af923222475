package ratelimit

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/civicgate/civicgate/internal/collectors"
)

// metrics are the limiter's Prometheus collectors (low cardinality: never a
// key or key id as a label).
type metrics struct {
	decisions   *prometheus.CounterVec // outcome = allowed | refused
	allowed     prometheus.Counter
	refused     prometheus.Counter
	storeErrors prometheus.Counter
	fallbacks   prometheus.Counter // decisions on_store_error made (a failed call, or the breaker open)
	redisCalls  prometheus.Counter
	costRefused prometheus.Counter // documents refused by a cost budget
	costSpent   prometheus.Counter // cost points charged to budgets
}

// newMetrics registers the collectors in reg (nil: unregistered), reusing
// collectors an earlier configuration registered.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	const ns, sub = "civicgate", "ratelimit"
	decisions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Subsystem: sub, Name: "decisions_total",
		Help: "Rate-limit decisions, by outcome (allowed, refused).",
	}, []string{"outcome"})
	storeErrors := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: ns, Subsystem: sub, Name: "store_errors_total",
		Help: "Failed calls to the Redis rate-limit store.",
	})
	fallbacks := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: ns, Subsystem: sub, Name: "store_fallbacks_total",
		Help: "Rate-limit decisions made by on_store_error without Redis: its call failed, or the breaker was open.",
	})
	redisCalls := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: ns, Subsystem: sub, Name: "redis_calls_total",
		Help: "Round trips to the Redis rate-limit store.",
	})
	costRefused := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: ns, Subsystem: sub, Name: "cost_refused_total",
		Help: "GraphQL documents refused because their key's cost budget was spent.",
	})
	costSpent := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: ns, Subsystem: sub, Name: "cost_points_total",
		Help: "GraphQL cost points charged to keys' cost budgets.",
	})
	if reg != nil {
		var err error
		if costRefused, err = collectors.Register(reg, costRefused); err != nil {
			return nil, err
		}
		if costSpent, err = collectors.Register(reg, costSpent); err != nil {
			return nil, err
		}
		if decisions, err = collectors.Register(reg, decisions); err != nil {
			return nil, err
		}
		if storeErrors, err = collectors.Register(reg, storeErrors); err != nil {
			return nil, err
		}
		if fallbacks, err = collectors.Register(reg, fallbacks); err != nil {
			return nil, err
		}
		if redisCalls, err = collectors.Register(reg, redisCalls); err != nil {
			return nil, err
		}
	}
	return &metrics{
		decisions:   decisions,
		allowed:     decisions.WithLabelValues("allowed"),
		refused:     decisions.WithLabelValues("refused"),
		storeErrors: storeErrors,
		fallbacks:   fallbacks,
		redisCalls:  redisCalls,
		costRefused: costRefused,
		costSpent:   costSpent,
	}, nil
}
