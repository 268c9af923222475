package redisconn

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/collectors"
)

// Reporter counts and logs a component's store errors: every error counts
// in civicgate_redis_errors_total{component,cause}; the log gets at most one
// line per cause per second, with the errors suppressed since the cause's
// previous line. Safe for concurrent use.
type Reporter struct {
	component string
	counters  map[string]prometheus.Counter // by cause
	log       *zap.Logger
	now       func() time.Time
	mu        sync.Mutex
	causes    map[string]*causeLog
}

// causeLog is when a cause was last logged and what was not logged since.
type causeLog struct {
	last       time.Time
	suppressed int
}

// logEvery is the least time between two lines of one cause.
const logEvery = time.Second

// ErrorsMetric is the counter's full name.
const ErrorsMetric = "civicgate_redis_errors_total"

// NewReporter returns a Reporter for component (ratelimit, persisted,
// gqlcache) that counts in reg (nil: unregistered; the counter is shared
// across reloads through internal/collectors) and logs to log (nil: no log).
func NewReporter(component string, reg prometheus.Registerer, log *zap.Logger) (*Reporter, error) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "civicgate", Subsystem: "redis", Name: "errors_total",
		Help: "Failed Redis calls, by component and cause (timeout, refused, auth, tls, moved, clusterdown, readonly, loading, other).",
	}, []string{"component", "cause"})
	if reg != nil {
		var err error
		if vec, err = collectors.Register(reg, vec); err != nil {
			return nil, err
		}
	}
	if log == nil {
		log = zap.NewNop()
	}
	r := &Reporter{component: component, counters: make(map[string]prometheus.Counter, len(Causes)), log: log,
		now: time.Now, causes: make(map[string]*causeLog, len(Causes))}
	for _, c := range Causes {
		r.counters[c] = vec.WithLabelValues(component, c) // the series exist at 0 from the start
		r.causes[c] = &causeLog{}
	}
	return r, nil
}

// Report counts err and logs it unless its cause was logged less than a
// second ago; it returns the cause. msg is the log line's message (e.g. "rate
// limit store error"); fields are added to it (never a key or a secret).
// A canceled context (the client went away) is not a store error: it is
// neither counted nor logged, and its cause is "".
func (r *Reporter) Report(err error, msg string, fields ...zap.Field) string {
	if err == nil || errors.Is(err, context.Canceled) {
		return ""
	}
	cause := Cause(err)
	r.counters[cause].Inc()
	now := r.now()
	r.mu.Lock()
	c := r.causes[cause]
	if !c.last.IsZero() && now.Sub(c.last) < logEvery {
		c.suppressed++
		r.mu.Unlock()
		return cause
	}
	suppressed := c.suppressed
	c.last, c.suppressed = now, 0
	r.mu.Unlock()
	r.log.Error(msg, append(fields, zap.String("component", r.component), zap.String("cause", cause),
		zap.Int("suppressed", suppressed), zap.Error(err))...)
	return cause
}
