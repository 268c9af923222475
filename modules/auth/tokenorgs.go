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

// orgStatuses answers whether a token's organization is suspended in the
// key store (docs/identity.md "Organizations"): an organization the store
// does not know is active — the IdP, not civicgate, owns its organizations —
// and one the operator suspended (`civicgate keys org suspend`) refuses its
// tokens like its keys. Answers are cached for the app's cache_ttl and
// dropped by the org: notification; while the store is unreachable the last
// answer stands (none: active), so an outage never refuses a caller the
// store has not refused.
type orgStatuses struct {
	app *App
	mu  sync.Mutex
	m   map[string]orgStatus
}

type orgStatus struct {
	suspended bool
	fetched   time.Time
}

// maxOrgStatuses bounds the cache; past it, it is cleared (each entry is
// one cheap query away).
const maxOrgStatuses = 100_000

func (o *orgStatuses) init(a *App) { o.app, o.m = a, map[string]orgStatus{} }

func (o *orgStatuses) suspended(ctx context.Context, org string, now time.Time) bool {
	o.mu.Lock()
	st, ok := o.m[org]
	o.mu.Unlock()
	if ok && now.Sub(st.fetched) < o.app.cache.ttl {
		return st.suspended
	}
	if o.app.pool == nil {
		return false // the keys file holds no organization without a key
	}
	lctx, cancel := context.WithTimeout(ctx, o.app.timeout)
	defer cancel()
	status, err := keystore.OrgStatus(lctx, o.app.pool, org)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		status = keystore.OrgActive
	case err != nil:
		o.app.logger.Warn("organization status unavailable; keeping the last answer", zap.String("org", org), zap.Error(err))
		return ok && st.suspended
	}
	st = orgStatus{suspended: status != keystore.OrgActive, fetched: now}
	o.mu.Lock()
	if len(o.m) >= maxOrgStatuses {
		clear(o.m)
	}
	o.m[org] = st
	o.mu.Unlock()
	return st.suspended
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
