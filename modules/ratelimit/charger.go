package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// upgradeCharger implements contract.Charger for a WebSocket upgrade the
// handler admitted: every further operation on the socket (each subscribe
// message) takes one unit from the same store key, at the same rate, as the
// upgrade request itself did. With usage per operation on, it is also the
// socket's contract.OperationRecorder: each subscribe the guard admits is
// counted on the key's operation row (docs/design.md D76).
type upgradeCharger struct {
	limiter  *limiter
	set      *policySet
	storeKey string // policy prefix + key, as the request was charged
	key      string
	keyID    string // for usage counting ("" not counted)
	org      string // its organization (read once, at the upgrade)
}

// Charge implements contract.Charger with the request path's decision:
// refused over the limit (retryAfter until one unit is available), err only
// when the store failed and on_store_error would have refused the request
// (closed); open allows, local decides in memory (inside take).
func (c *upgradeCharger) Charge(ctx context.Context) (allowed bool, retryAfter time.Duration, err error) {
	d, err := c.limiter.take(ctx, c.set, c.storeKey, c.key, 1)
	m := c.limiter.metrics.Load()
	if err != nil {
		if errors.Is(err, errStoreDown) && c.limiter.mode == modeOpen {
			m.allowed.Inc()
			c.count(usage.Delta{Admitted: 1})
			return true, 0, nil
		}
		return false, 0, fmt.Errorf("civic_rate_limit: charge: %w", err)
	}
	if d.granted == 0 {
		m.refused.Inc()
		c.count(usage.Delta{Refused: 1})
		return false, max(time.Microsecond, time.Duration(d.retryAfter)*time.Microsecond), nil
	}
	m.allowed.Inc()
	c.count(usage.Delta{Admitted: 1})
	return true, 0, nil
}

// count adds one operation of the socket to the key's usage.
func (c *upgradeCharger) count(d usage.Delta) {
	if u := c.limiter.usage; u != nil && c.keyID != "" {
		u.add(c.keyID, fixedOrg(c.org), c.limiter.clock(), d)
	}
}

// RecordOperation implements contract.OperationRecorder: one request of op,
// admitted now, as serveAdmitted counts a POST's (docs/design.md D70, D76).
// The guard calls it once the subscribe passed every check, its charge
// included, so a refused subscribe is not an operation that ran.
func (c *upgradeCharger) RecordOperation(op *contract.GraphQLOperation, cost int64, latency time.Duration) {
	u := c.limiter.usage
	if u == nil || u.ops == nil || c.keyID == "" || op == nil {
		return
	}
	s := usage.OperationSample{KeyID: c.keyID, Org: fixedOrg(c.org), At: c.limiter.clock(), Operation: op,
		Cost: cost, Latency: latency}
	u.ops.Add(&s)
}

// RecordOperationError implements contract.OperationRecorder: one error of
// op, counted by RecordOperation when it was admitted at admitted, on the
// row of that hour (docs/design.md D83).
func (c *upgradeCharger) RecordOperationError(op *contract.GraphQLOperation, admitted time.Time) {
	u := c.limiter.usage
	if u == nil || u.ops == nil || c.keyID == "" || op == nil {
		return
	}
	s := usage.OperationSample{KeyID: c.keyID, Org: fixedOrg(c.org), At: admitted, Operation: op, ErrorOnly: true}
	u.ops.Add(&s)
}

// withCharger returns r carrying a Charger for storeKey and rt when r is a
// WebSocket upgrade (Upgrade: websocket with Connection: upgrade), else r
// itself: plain requests pay nothing. When the key's operations are counted
// (keyID set, usage per operation on), the Charger is also the socket's
// OperationRecorder.
func (h *Handler) withCharger(r *http.Request, set *policySet, storeKey, key, keyID string, repl *caddy.Replacer) *http.Request {
	if !isWebSocketUpgrade(r.Header) {
		return r
	}
	c := &upgradeCharger{limiter: h.limiter, set: set, storeKey: storeKey, key: key, keyID: keyID}
	if keyID != "" && repl != nil {
		c.org = (*replacerOrg)(repl).Org()
	}
	r, q := contract.AttachRequest(r)
	q.SetCharger(c)
	if u := h.limiter.usage; u != nil && u.ops != nil && keyID != "" {
		q.SetOperationRecorder(c)
	}
	return r
}

// isWebSocketUpgrade reports whether the header asks for a WebSocket upgrade:
// the token "websocket" in Upgrade and "upgrade" in Connection, both
// case-insensitive, in any of the header lines' comma-separated lists.
func isWebSocketUpgrade(h http.Header) bool {
	return hasToken(h["Upgrade"], "websocket") && hasToken(h["Connection"], "upgrade")
}

// hasToken reports whether one of the comma-separated elements of values is
// token (ASCII case-insensitive, optional white space around it), without
// allocating.
func hasToken(values []string, token string) bool {
	for _, v := range values {
		for v != "" {
			var elem string
			elem, v, _ = strings.Cut(v, ",")
			if strings.EqualFold(strings.Trim(elem, " \t"), token) {
				return true
			}
		}
	}
	return false
}

var (
	_ contract.Charger           = (*upgradeCharger)(nil)
	_ contract.OperationRecorder = (*upgradeCharger)(nil)
)
