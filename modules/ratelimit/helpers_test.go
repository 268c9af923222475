package ratelimit

import (
	"context"
	"time"

	"github.com/civicgate/civicgate/modules/contract"
)

// oneRate is the policy set of a single rate, named "t", as l would build it.
func oneRate(l *limiter, rates ...contract.Rate) *policySet {
	return newPolicySet("t", "", rates, l.share, l.maxLease)
}

// take1 decides one request of key under the rates.
func take1(ctx context.Context, l *limiter, key string, rates ...contract.Rate) (decision, error) {
	s := oneRate(l, rates...)
	return l.take(ctx, s, s.prefix+key, key, 1)
}

// fakeClock is a clock tests move by hand.
type fakeClock struct{ now int64 } // µs

func (c *fakeClock) time() time.Time { return time.UnixMicro(c.now) }
