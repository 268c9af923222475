package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/civicgate/civicgate/modules/contract"
)

// Limit is a named set of rates that code outside an API route decides
// against with the app's store — the same sliding windows, Redis keys, breaker
// and on_store_error mode as the civic_rate_limit handler — for example the
// console's sign-up limits per address (docs/design.md D74). Its Redis keys
// are the handler's under the name: prefix{key}:<name>:<quota>/<window>, so
// give it a name no tier uses.
type Limit struct {
	limiter *limiter
	set     *policySet
}

// ErrLimitStoreDown is returned by Take when the store is unusable and the
// app's on_store_error mode is open or closed: the caller decides.
var ErrLimitStoreDown = errors.New("ratelimit: store unavailable")

// Limit returns a Limit of rates named name. It leases nothing (each Take is
// one round trip): it is for rare events, not for every request.
func (a *App) Limit(name string, rates []contract.Rate) (*Limit, error) {
	if a.limiter == nil {
		return nil, errors.New("ratelimit: the app is not provisioned")
	}
	if len(rates) == 0 || len(rates) > maxRates {
		return nil, fmt.Errorf("ratelimit: a limit has 1 to %d rates", maxRates)
	}
	return &Limit{limiter: a.limiter, set: newPolicySet(name, "", rates, 0, a.limiter.maxLease)}, nil
}

// Take counts one event for key: allowed, or refused with how long until one
// more fits.
func (l *Limit) Take(ctx context.Context, key string) (allowed bool, retryAfter time.Duration, err error) {
	d, err := l.limiter.take(ctx, l.set, l.set.prefix+key, key, 1)
	if errors.Is(err, errStoreDown) {
		if l.limiter.mode == modeOpen {
			return true, 0, nil
		}
		return false, 0, ErrLimitStoreDown
	}
	if err != nil {
		return false, 0, err
	}
	if d.granted == 0 {
		return false, time.Duration(max(d.retryAfter, 0)) * time.Microsecond, nil
	}
	return true, 0, nil
}
