package wsproxy

import (
	"context"
	"math"
	"sync"

	"go.uber.org/zap"
)

// subscriptions is the set of a connection's active subscription ids and
// the Slots they hold. The reader adds and removes ids; the writer removes
// them when the upstream ends a subscription.
type subscriptions struct {
	slots Slots

	mu     sync.Mutex
	active map[string]activeSub
	closed bool
}

// activeSub is one active subscription of a connection.
type activeSub struct {
	holdsSlot bool   // holds a Slots slot
	failed    func() // the Checker's, for an upstream error message; nil: none
}

func (s *subscriptions) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.active[id]
	return ok
}

func (s *subscriptions) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.active)
}

// add makes id active; it reports false (and gives the slot back) once the
// connection has ended.
func (s *subscriptions) add(id string, sub activeSub) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		if sub.holdsSlot {
			s.slots.Release()
		}
		return false
	}
	if s.active == nil {
		s.active = make(map[string]activeSub)
	}
	s.active[id] = sub
	return true
}

// remove ends id and releases its slot; unknown ids are ignored.
func (s *subscriptions) remove(id string) {
	s.mu.Lock()
	sub, ok := s.active[id]
	delete(s.active, id)
	s.mu.Unlock()
	if ok && sub.holdsSlot {
		s.slots.Release()
	}
}

// removeBytes is remove for an id read from the upstream's stream; it
// returns what was removed (ok false: id was not active).
func (s *subscriptions) removeBytes(id []byte) (sub activeSub, ok bool) {
	s.mu.Lock()
	sub, ok = s.active[string(id)] // no allocation for a map lookup
	if ok {
		delete(s.active, string(id))
	}
	s.mu.Unlock()
	if ok && sub.holdsSlot {
		s.slots.Release()
	}
	return sub, ok
}

// closeAll releases every slot held; later adds are refused.
func (s *subscriptions) closeAll() {
	s.mu.Lock()
	held := 0
	for _, sub := range s.active {
		if sub.holdsSlot {
			held++
		}
	}
	s.active = nil
	s.closed = true
	s.mu.Unlock()
	for range held {
		s.slots.Release()
	}
}

// admit runs the admission checks of one subscribe after the protocol
// checks (admitSubscribe).
func (c *filterConn) admit(ctx context.Context, payload []byte) (forward []byte, sub activeSub, errs []byte) {
	return admitSubscribe(ctx, &c.cfg, c.subs.count(), payload)
}

// admitSubscribe runs the admission checks of one subscribe, the same for
// the tunnel filter and the terminator: MaxSubscriptions (active is the
// connection's count), Slots, Charger, Checker, in that order. It returns
// the payload to forward, whether a slot was taken and the Checker's
// failed, or errs, the GraphQL errors of the refusal.
func admitSubscribe(ctx context.Context, cfg *Config, active int, payload []byte) (forward []byte, sub activeSub, errs []byte) {
	if active >= cfg.MaxSubscriptions {
		cfg.refused(OutcomeSubscriptionLimit)
		return nil, sub, graphQLErrors("Too many subscriptions on this connection", "SUBSCRIPTION_LIMIT")
	}
	if cfg.Slots != nil {
		if !cfg.Slots.Acquire() {
			cfg.refused(OutcomeSubscriptionLimit)
			return nil, sub, graphQLErrors("Too many subscriptions for this key", "SUBSCRIPTION_LIMIT")
		}
		sub.holdsSlot = true
	}
	refuse := func(errs []byte) ([]byte, activeSub, []byte) {
		if sub.holdsSlot {
			cfg.Slots.Release()
		}
		return nil, activeSub{}, errs
	}
	if cfg.Charger != nil {
		allowed, retryAfter, err := cfg.Charger.Charge(ctx)
		if err != nil {
			cfg.Logger.Error("charging a subscription failed", zap.Error(err))
			cfg.refused(OutcomeInternal)
			return refuse(graphQLErrors("Internal Server Error", "INTERNAL_SERVER_ERROR"))
		}
		if !allowed {
			secs := int64(math.Ceil(retryAfter.Seconds()))
			if secs < 1 {
				secs = 1
			}
			cfg.refused(OutcomeRateLimited)
			return refuse(rateLimitedErrors(secs))
		}
	}
	forward = payload
	if cfg.Checker != nil {
		var errs []byte
		forward, errs, sub.failed = cfg.Checker.CheckSubscribe(ctx, payload)
		if errs != nil || forward == nil {
			if errs == nil {
				errs = graphQLErrors("Subscription refused", "FORBIDDEN")
			}
			return refuse(errs)
		}
	}
	return forward, sub, nil
}

// The outcomes Config.Refused is told of.
const (
	OutcomeBearer            = "bearer_in_request"
	OutcomeSubscriptionLimit = "subscription_limit"
	OutcomeRateLimited       = "rate_limited"
	OutcomeInternal          = "internal_error"
)

// refused tells Config.Refused of a refusal the filter decided.
func (c *filterConn) refused(outcome string) { c.cfg.refused(outcome) }

func (cfg *Config) refused(outcome string) {
	if cfg.Refused != nil {
		cfg.Refused(outcome)
	}
}
