package auth

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/civicgate/civicgate/internal/collectors"
	"github.com/civicgate/civicgate/modules/auth/accesstoken"
)

// Outcomes, the "outcome" label of civicgate_auth_requests_total.
const (
	outcomeOK          = "ok"
	outcomeMissing     = "missing"
	outcomeMalformed   = "malformed"
	outcomeInvalid     = "invalid"
	outcomeRevoked     = "revoked"
	outcomeRotated     = "rotated"
	outcomeExpired     = "expired" // the key's expiry has come (docs/design.md D71)
	outcomeWrongEnv    = "wrong_env"
	outcomeSuspended   = "suspended"
	outcomeNotEntitled = "not_entitled"
	outcomeError       = "error"
	outcomeKeyInURL    = "key_in_url" // refused: something key-shaped in the URL
	outcomeThrottled   = "throttled"  // refused: too many unknown keys from the client
	outcomeTokenDenied = "token_denied"
)

// tokenOutcomes are the outcomes of refused access tokens, by kind:
// "token_" + the kind's name (token_expired, token_bad_signature, …).
var tokenOutcomes = func() map[accesstoken.Kind]string {
	m := make(map[accesstoken.Kind]string)
	for _, k := range accesstoken.Kinds() {
		m[k] = "token_" + k.String()
	}
	return m
}()

var outcomes = []string{outcomeOK, outcomeMissing, outcomeMalformed, outcomeInvalid, outcomeRevoked, outcomeRotated,
	outcomeExpired, outcomeWrongEnv, outcomeSuspended, outcomeNotEntitled, outcomeError, outcomeKeyInURL, outcomeThrottled, outcomeTokenDenied}

func init() {
	for _, k := range accesstoken.Kinds() {
		outcomes = append(outcomes, tokenOutcomes[k])
	}
}

// authMetrics holds one pre-resolved counter per outcome (no per-request label lookups).
type authMetrics struct {
	requests map[string]prometheus.Counter
	watches  prometheus.Gauge // live credential watches (contract.Watcher)
	// deniesSetAside: rows of the token deny list in force that its table's
	// rules refuse, so they deny nothing (keystore.LoadDenials).
	deniesSetAside prometheus.Gauge
}

func newAuthMetrics(reg prometheus.Registerer) (*authMetrics, error) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "civicgate", Subsystem: "auth", Name: "requests_total",
		Help: "Requests seen by civic_auth, by outcome.",
	}, []string{"outcome"})
	watches := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "civicgate", Subsystem: "auth", Name: "credential_watches",
		Help: "Open long-lived exchanges (WebSocket, event stream) whose key civic_auth is watching.",
	})
	setAside := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "civicgate", Subsystem: "auth", Name: "token_denials_set_aside",
		Help: "Rows of the token deny list that its table's rules refuse, set aside at the last load (each is logged by key).",
	})
	if reg != nil {
		var err error
		if setAside, err = collectors.Register(reg, setAside); err != nil {
			return nil, err
		}
		if vec, err = collectors.Register(reg, vec); err != nil {
			return nil, err
		}
		if watches, err = collectors.Register(reg, watches); err != nil {
			return nil, err
		}
	}
	m := &authMetrics{requests: make(map[string]prometheus.Counter, len(outcomes)), watches: watches, deniesSetAside: setAside}
	for _, o := range outcomes {
		m.requests[o] = vec.WithLabelValues(o)
	}
	return m, nil
}

func (m *authMetrics) inc(outcome string) { m.requests[outcome].Inc() }
