package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// costBudget is contract.CostBudget for one admitted request (and, on a
// WebSocket, every subscribe it carries): the key's budget of GraphQL cost
// points per window, decided like a request policy — the same sliding
// window, store, leases and on_store_error — with the document's cost as the
// units taken (docs/design.md D27).
type costBudget struct {
	limiter     *limiter
	set         *policySet // the budget: one rate
	storeKey    string
	key         string
	req         *policySet // the request policies, for the RateLimit header
	reqDecision decision   // the request's decision (n 0: store down, open)
	spent       atomic.Int64
	refused     atomic.Bool // the HTTP request itself was refused by the budget
	// rateLimit is the value the handler's RateLimit header slice holds (its
	// admission's): rewritten in place while the header still holds it.
	rateLimit *string
	// crossings, when usage is recorded: where the budget's thresholds go
	// and whose they are (docs/design.md D81); nil: not recorded.
	crossings    *usage.CrossingMeter
	orgID, keyID string // keyID "": counted per organization
}

// setRateLimit sets h's RateLimit to v, in the handler's own slice when h
// still holds it (no allocation for the slice).
func (b *costBudget) setRateLimit(h http.Header, v string) {
	if cur := h["Ratelimit"]; len(cur) == 1 && b.rateLimit != nil && &cur[0] == b.rateLimit {
		cur[0] = v
		return
	}
	h["Ratelimit"] = []string{v}
}

// Spend implements contract.CostBudget.
func (b *costBudget) Spend(ctx context.Context, cost int64, h http.Header) (contract.CostDecision, error) {
	budget := b.set.rates[0]
	out := contract.CostDecision{Budget: budget}
	if cost > budget.Quota { // the guard answers it as a document limit (HTTP 200): admitted, not refused
		out.OverBudget = true
		return out, nil
	}
	if cost <= 0 {
		out.Allowed = true
		return out, nil
	}
	d, err := b.limiter.take(ctx, b.set, b.storeKey, b.key, cost)
	m := b.limiter.metrics.Load()
	if err != nil {
		if errors.Is(err, errStoreDown) && b.limiter.mode == modeOpen {
			b.spent.Add(cost)
			out.Allowed = true
			return out, nil
		}
		return out, fmt.Errorf("civic_rate_limit: cost budget: %w", err)
	}
	var buf [96]byte
	if b.crossings != nil {
		refusing := -1
		if d.granted == 0 {
			refusing = 0
		}
		noteCrossings(b.crossings, b.set, usage.KindCost, b.orgID, b.keyID, &d, refusing)
	}
	if d.granted == 0 {
		m.costRefused.Inc()
		retry := max(1, ceilDiv(d.retryAfter, 1e6))
		out.RetryAfter = time.Duration(retry) * time.Second
		if h != nil {
			b.refused.Store(true)
			v := append(buf[:0], b.set.names[0]...)
			v = append(v, ";r="...)
			v = strconv.AppendInt(v, d.remaining[0], 10)
			v = append(v, ";t="...)
			v = strconv.AppendInt(v, retry, 10)
			b.setRateLimit(h, string(v))
		}
		return out, nil
	}
	m.costSpent.Add(float64(cost))
	b.spent.Add(cost)
	out.Allowed = true
	if h != nil {
		// The request's policy closest to exhaustion is already in RateLimit;
		// the budget replaces it when it is closer.
		rd := &b.reqDecision
		if rd.n == 0 || d.remaining[0]*b.req.rates[b.req.closest(rd)].Quota < rd.remaining[b.req.closest(rd)]*budget.Quota {
			b.setRateLimit(h, string(appendRateLimit(buf[:0], b.set.names[0], d.remaining[0], d.resetAfter[0])))
		}
	}
	return out, nil
}

var _ contract.CostBudget = (*costBudget)(nil)
