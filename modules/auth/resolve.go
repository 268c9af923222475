package auth

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

// errStore is returned when the store failed and nothing usable is cached.
var errStore = errors.New("civic_auth: key store unavailable")

// resolve returns the cache entry for h, asking the store when the cached one
// is missing or expired; looked reports whether this call asked the store
// (not when it only shared a concurrent call's lookup).
func (a *App) resolve(ctx context.Context, h keystore.Hash, now time.Time) (e *resolvedKey, looked bool, err error) {
	return a.resolveCached(ctx, h, a.cache.get(h), now)
}

// resolveFor resolves h for request r under the failed-lookup limit: a key
// cached as known is resolved as usual; any other key is refused (wait > 0)
// while r's client is over the limit, and otherwise counts against it when
// the store says it is unknown.
func (a *App) resolveFor(r *http.Request, h keystore.Hash, now time.Time) (e *resolvedKey, wait time.Duration, err error) {
	cached := a.cache.get(h)
	if a.failed == nil || cached != nil && cached.found {
		e, _, err = a.resolveCached(r.Context(), h, cached, now)
		return e, 0, err
	}
	client := clientAddr(r)
	wait, ok := a.failed.reserve(client, now)
	if !ok {
		return nil, max(wait, time.Nanosecond), nil
	}
	e, looked, err := a.resolveCached(r.Context(), h, cached, now)
	if err != nil || !looked || e.found {
		a.failed.refund(client)
	}
	return e, 0, err
}

// resolveCached is resolve with h's cache entry (or nil) already read.
// Concurrent lookups of one hash collapse into one store call, made with the
// lookup timeout but not the first caller's cancellation (the others wait on
// it too). While the store fails, an expired entry of a known key is served;
// otherwise errStore.
func (a *App) resolveCached(ctx context.Context, h keystore.Hash, cached *resolvedKey, now time.Time) (*resolvedKey, bool, error) {
	if cached != nil && a.cache.fresh(cached, now) {
		return cached, false, nil
	}
	looked := false // set only when this call's function runs (Do runs it in this goroutine)
	v, err, _ := a.flight.Do(string(h[:]), func() (any, error) {
		e, l, err := a.refresh(context.WithoutCancel(ctx), h, now)
		looked = l
		return e, err
	})
	if err != nil {
		return nil, looked, err
	}
	return v.(*resolvedKey), looked, nil
}

// refresh asks the store about h and caches the answer (one flight).
// looked reports whether the store was asked.
func (a *App) refresh(ctx context.Context, h keystore.Hash, now time.Time) (*resolvedKey, bool, error) {
	old := a.cache.get(h)
	if old != nil && a.cache.fresh(old, now) { // a flight that ended meanwhile cached it
		return old, false, nil
	}
	lctx, cancel := context.WithTimeout(ctx, a.timeout)
	lctx, endSpan := startStoreLookup(lctx, a.Keys.Source)
	rec, err := a.store.lookup(lctx, h)
	endSpan(err)
	cancel()
	switch {
	case err == nil:
		e := a.newEntry(h, rec, now)
		if old != nil && old.found && old.rec.Equal(rec) {
			e.ident.Store(old.ident.Load())
		}
		a.cache.put(h, e)
		return e, true, nil
	case errors.Is(err, keystore.ErrNotFound):
		e := &resolvedKey{fetched: now}
		a.cache.put(h, e)
		return e, true, nil
	default:
		if old != nil && old.found {
			old.staleUntil.Store(now.Add(a.cache.ttl).UnixNano())
			a.logger.Warn("key store unavailable; serving cached key", zap.String("key_id", old.rec.KeyID), zap.Error(err))
			return old, true, nil
		}
		a.logger.Error("key store unavailable", zap.Error(err))
		return nil, true, errStore
	}
}

func (a *App) newEntry(h keystore.Hash, rec keystore.Record, now time.Time) *resolvedKey {
	e := &resolvedKey{
		found: true, rec: rec, fetched: now, tier: a.tierOf(rec), hash: h, watches: a.watches, app: a,
		keyIDVal: rec.KeyID, orgVal: rec.OrgID, tierVal: rec.Tier, envVal: rec.Env,
	}
	e.caller = contract.Caller{KeyID: rec.KeyID, Org: rec.OrgID, Tier: rec.Tier, Env: rec.Env, Families: e.families()}
	e.placeholders = e.placeholder
	if e.tier != nil && (rec.GrantRequests > 0 || rec.GrantCost > 0) {
		e.grantRateVal, e.grantCostVal = e.tier.granted(rec.GrantRequests, rec.GrantCost)
		e.grantPlaceholders = e.grantedPlaceholder
	}
	return e
}

// grantedPlaceholder is placeholder with the grant's rate and cost budget.
func (e *resolvedKey) grantedPlaceholder(name string) (any, bool) {
	switch name {
	case contract.CivicRate:
		return e.grantRateVal, true
	case contract.CivicCostBudget:
		return e.grantCostVal, true
	}
	return e.placeholder(name)
}

// placeholdersAt is the placeholders of e for a request at now: the
// granted figures while the organization's grant runs, the tier's from its
// end on, decided per request from the cached record as an expiry is.
func (e *resolvedKey) placeholdersAt(now time.Time) caddy.ReplacerFunc {
	if e.grantPlaceholders != nil && e.rec.Granted(now) {
		return e.grantPlaceholders
	}
	return e.placeholders
}

// placeholder answers the {civic.*} placeholders (modules/contract) for a
// found key whose tier is configured.
func (e *resolvedKey) placeholder(name string) (any, bool) {
	switch name {
	case contract.CivicKeyID:
		return e.keyIDVal, true
	case contract.CivicOrg:
		return e.orgVal, true
	case contract.CivicTier:
		return e.tierVal, true
	case contract.CivicEnv:
		return e.envVal, true
	case contract.CivicRate:
		return e.tier.rateVal, true
	case contract.CivicCostBudget:
		return e.tier.costVal, true
	case contract.CivicFamilies:
		return e.tier.familiesVal, true
	}
	return nil, false
}

// identityFor returns e's identity assertion (assertionFor).
func (a *App) identityFor(e *resolvedKey, now time.Time) (*signedIdentity, error) {
	return a.assertionFor(&e.caller, &e.ident, now)
}

// FreshIdentity is contract.IdentitySource: the key's current assertion,
// re-signed once half its lifetime has passed.
func (e *resolvedKey) FreshIdentity(now time.Time) (string, error) {
	s, err := e.app.identityFor(e, now)
	if err != nil {
		return "", err
	}
	return s.token, nil
}

// FreshIdentity is contract.IdentitySource for a token's caller.
func (rt *resolvedToken) FreshIdentity(now time.Time) (string, error) {
	s, err := rt.t.app.assertionFor(&rt.caller, &rt.ident, now)
	if err != nil {
		return "", err
	}
	return s.token, nil
}

// assertionFor returns the identity assertion of caller kept in slot,
// signing a new one when none exists or half the lifetime of the current
// one has passed.
func (a *App) assertionFor(caller *contract.Caller, slot *atomic.Pointer[signedIdentity], now time.Time) (*signedIdentity, error) {
	if s := slot.Load(); s != nil && now.Before(s.refresh) {
		return s, nil
	}
	tok, err := contract.SignIdentity(a.secret, *caller, now, a.idTTL)
	if err != nil {
		return nil, err
	}
	s := &signedIdentity{token: tok, header: []string{tok}, refresh: now.Add(a.idTTL / 2)}
	slot.Store(s)
	return s, nil
}
