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
}

// Spend implements contract.CostBudget.
func (b *costBudget) Spend(ctx context.Context, cost int64, h http.Header) (contract.CostDecision, error) {
	budget := b.set.rates[0]
	out := contract.CostDecision{Budget: budget}
	if cost > budget.Quota {
		out.OverBudget = true
		if h != nil {
			b.refused.Store(true)
		}
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
			h["Ratelimit"] = []string{string(v)}
		}
		return out, nil
	}
	m.costSpent.Add(float64(cost))
	b.spent.Add(cost)
	out.Allowed = true
	if h != nil {
		name, r, t := b.set.names[0], d.remaining[0], d.resetAfter[0]
		if rd := &b.reqDecision; rd.n > 0 {
			if i := b.req.closest(rd); rd.remaining[i]*budget.Quota < r*b.req.rates[i].Quota {
				name, r, t = b.req.names[i], rd.remaining[i], rd.resetAfter[i]
			}
		}
		h["Ratelimit"] = []string{string(appendRateLimit(buf[:0], name, r, t))}
	}
	return out, nil
}

var _ contract.CostBudget = (*costBudget)(nil)
