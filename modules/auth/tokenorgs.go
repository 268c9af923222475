package auth

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// orgStatuses maps a token's organization claim to the key store's
// organization, by id or by name (docs/identity.md "Organizations"): one the
// store knows is the token's {civic.org} (so its usage is that
// organization's, in the console too) and, when the operator suspended it
// (`civicgate keys suspend --org`), refuses its tokens like its keys; one the
// store does not know is active and keeps the claim's value — the IdP, not
// civicgate, owns its organizations. Answers are cached for the app's
// cache_ttl and dropped on any org: notification (it names the store's id,
// the cache is keyed by the claim); while the store is unreachable the last
// answer stands (none: active, the claim's value), so an outage never
// refuses a caller the store has not refused.
type orgStatuses struct {
	app *App
	mu  sync.Mutex
	m   map[string]orgStatus
}

type orgStatus struct {
	id        string // the store's id; "" when the store does not know it
	suspended bool
	fetched   time.Time
}

// maxOrgStatuses bounds the cache; past it, it is cleared (each entry is
// one cheap query away).
const maxOrgStatuses = 100_000

func (o *orgStatuses) init(a *App) { o.app, o.m = a, map[string]orgStatus{} }

func (o *orgStatuses) suspended(ctx context.Context, org string, now time.Time) bool {
	return o.lookup(ctx, org, now).suspended
}

// storeID is the store's id of the organization the claim names, or the
// claim itself when the store does not know it.
func (o *orgStatuses) storeID(ctx context.Context, org string, now time.Time) string {
	if st := o.lookup(ctx, org, now); st.id != "" {
		return st.id
	}
	return org
}

func (o *orgStatuses) lookup(ctx context.Context, org string, now time.Time) orgStatus {
	o.mu.Lock()
	st, ok := o.m[org]
	o.mu.Unlock()
	if ok && now.Sub(st.fetched) < o.app.cache.ttl {
		return st
	}
	if o.app.pool == nil {
		return orgStatus{} // the keys file holds no organization without a key
	}
	lctx, cancel := context.WithTimeout(ctx, o.app.timeout)
	defer cancel()
	id, status, err := keystore.OrgByIDOrName(lctx, o.app.pool, org)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		id, status = "", keystore.OrgActive
	case err != nil:
		o.app.logger.Warn("organization status unavailable; keeping the last answer", zap.String("org", org), zap.Error(err))
		return st
	}
	st = orgStatus{id: id, suspended: status != keystore.OrgActive, fetched: now}
	o.mu.Lock()
	if len(o.m) >= maxOrgStatuses {
		clear(o.m)
	}
	o.m[org] = st
	o.mu.Unlock()
	return st
}

// forget drops org's answer (an org: notification); "" drops all.
func (o *orgStatuses) forget(org string) {
	o.mu.Lock()
	if org == "" {
		clear(o.m)
	} else {
		delete(o.m, org)
	}
	o.mu.Unlock()
}
