package mcp

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/civicgate/civicgate/internal/collectors"
)

// Outcomes of a tools/call (civicgate_mcp_tool_calls_total).
const (
	callOK            = "ok"             // 200 with data
	callGraphQLError  = "graphql_error"  // the GraphQL answer held errors
	callBadArguments  = "bad_arguments"  // refused by the tool's input schema: nothing sent
	callNotEntitled   = "not_entitled"   // a tool of a family the tier lacks
	callRateLimited   = "rate_limited"   // 429 from the rate limit
	callRefused       = "refused"        // another 4xx of the chain
	callUpstreamError = "upstream_error" // 5xx, or an answer without a GraphQL result
	callTooLarge      = "too_large"      // the answer exceeded max_message
	callCanceled      = "canceled"       // the call's HTTP request or session ended first
)

// Reasons a request is answered by civic_mcp itself with an error
// (civicgate_mcp_refusals_total).
const (
	refusedOrigin         = "origin"
	refusedUnknownSession = "unknown_session"
	refusedKeySessions    = "key_sessions"
	refusedSessions       = "sessions"
	refusedTooLarge       = "too_large"
	refusedBatch          = "batch"
	refusedBadRequest     = "bad_request"
	refusedMessageRate    = "message_rate"
	refusedRateLimited    = "rate_limited"    // a modern tools/call over the API rate, its body unread (moderncall.go)
	refusedNotEntitled    = "not_entitled"    // a modern tools/call refused from Mcp-Name, its body unread
	refusedHeaderMismatch = "header_mismatch" // standard headers missing, malformed or not the body's
	refusedVersion        = "unsupported_version"
	refusedListens        = "listens" // subscriptions/listen over max_sessions_per_key or max_sessions
)

// Reasons a session ends (civicgate_mcp_sessions_ended_total).
const (
	endDeleted  = "deleted"  // DELETE from the client
	endIdle     = "idle"     // session_idle_timeout without a request
	endRevoked  = "revoked"  // the credential stopped being valid
	endUnloaded = "unloaded" // the configuration was replaced
	endFailed   = "failed"   // initialize did not complete
)

// metrics are civic_mcp's collectors; no key, session or tool name as a
// label.
type metrics struct {
	open     prometheus.Gauge
	listens  prometheus.Gauge
	opened   prometheus.Counter
	ended    *prometheus.CounterVec
	calls    *prometheus.CounterVec
	refusals *prometheus.CounterVec
}

// newMetrics registers the collectors in reg (nil: unregistered), reusing
// those an earlier configuration registered (collectors.Register), so the
// open-sessions gauge stays right across reloads: a configuration's
// sessions decrement it as they end.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	const ns, sub = "civicgate", "mcp"
	m := &metrics{
		open: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "sessions_open",
			Help: "MCP sessions open."}),
		listens: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "listens_open",
			Help: "MCP subscriptions/listen streams open (revision 2026-07-28)."}),
		opened: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "sessions_opened_total",
			Help: "MCP sessions opened (initialize admitted)."}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "sessions_ended_total",
			Help: "MCP sessions ended, by reason (deleted, idle, revoked, unloaded, failed)."}, []string{"reason"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "tool_calls_total",
			Help: "MCP tool calls, by outcome (ok, graphql_error, bad_arguments, not_entitled, rate_limited, refused, upstream_error, too_large, canceled)."}, []string{"outcome"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "refusals_total",
			Help: "MCP requests civic_mcp refused itself, by reason (origin, unknown_session, key_sessions, sessions, too_large, batch, bad_request, message_rate, not_entitled, header_mismatch, unsupported_version, listens)."}, []string{"reason"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.open, err = collectors.Register(reg, m.open); err != nil {
		return nil, err
	}
	if m.opened, err = collectors.Register(reg, m.opened); err != nil {
		return nil, err
	}
	if m.listens, err = collectors.Register(reg, m.listens); err != nil {
		return nil, err
	}
	for _, v := range []**prometheus.CounterVec{&m.ended, &m.calls, &m.refusals} {
		if *v, err = collectors.Register(reg, *v); err != nil {
			return nil, err
		}
	}
	return m, nil
}
