package auth

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

// Watches of long-lived exchanges opened with an access token (contract.
// Watcher, docs/design.md D22): a watch fires at the token's exp (reason
// "token expired"), when a denial names its subject or jti, and when its
// organization is suspended — the last two as soon as the NOTIFY arrives
// (tokenAuth.recheck), so within the 2 s an API key's watch promises.

// tokenWatch implements contract.CredentialWatch for one exchange.
type tokenWatch struct {
	t    *tokenAuth
	rt   *resolvedToken
	done chan struct{}
	// timer fires at exp; set before the watch can fire (under timerMu,
	// which fire also takes: the timer's own goroutine may be the one firing).
	timerMu sync.Mutex
	timer   *time.Timer
	once    sync.Once
	// reason is written once before done is closed; read after.
	reason string
}

// WatchCredential implements contract.Watcher.
func (rt *resolvedToken) WatchCredential() contract.CredentialWatch {
	t := rt.t
	w := &tokenWatch{t: t, rt: rt, done: make(chan struct{})}
	t.watchMu.Lock()
	t.watches[w] = struct{}{}
	t.watchMu.Unlock()
	t.app.metrics.watches.Inc()
	w.timerMu.Lock()
	w.timer = time.AfterFunc(time.Until(rt.id.Expiry), func() { w.fire(msgTokenExpired) })
	w.timerMu.Unlock()
	// Denied or suspended between the request's check and now: fire at once.
	t.recheckOne(context.Background(), w, time.Now())
	return w
}

func (w *tokenWatch) Done() <-chan struct{} { return w.done }

func (w *tokenWatch) Reason() string {
	select {
	case <-w.done:
		return w.reason
	default:
		return ""
	}
}

// fire ends the watch with reason ("" for Stop).
func (w *tokenWatch) fire(reason string) {
	w.once.Do(func() {
		w.reason = reason
		w.timerMu.Lock()
		if w.timer != nil {
			w.timer.Stop()
		}
		w.timerMu.Unlock()
		w.t.watchMu.Lock()
		delete(w.t.watches, w)
		w.t.watchMu.Unlock()
		w.t.app.metrics.watches.Dec()
		close(w.done)
	})
}

func (w *tokenWatch) Stop() { w.fire("") }

// recheck fires every watch whose token is now denied or whose organization
// is suspended (after a deny list reload or an org notification).
func (t *tokenAuth) recheck(ctx context.Context) {
	now := time.Now()
	t.watchMu.Lock()
	ws := make([]*tokenWatch, 0, len(t.watches))
	for w := range t.watches {
		ws = append(ws, w)
	}
	t.watchMu.Unlock()
	for _, w := range ws {
		t.recheckOne(ctx, w, now)
	}
}

func (t *tokenAuth) recheckOne(ctx context.Context, w *tokenWatch, now time.Time) {
	id := &w.rt.id
	if _, denied := t.denials.Load().Denied(id.Issuer, id.Subject, id.JTI); denied {
		w.fire(msgTokenDenied)
		return
	}
	if t.orgs.suspended(ctx, id.Organization, now) {
		w.fire(contract.MsgOrgSuspended)
	}
}

// reloadDenials reads the deny list in force (on start, on every LISTEN
// (re)start and on each deny notification) and rechecks the open watches.
// A load that fails keeps the list it had: a store outage never lifts a
// denial. Tokens already resolved are checked against the new list on their
// next request.
func (t *tokenAuth) reloadDenials(ctx context.Context) {
	if t.app.pool == nil {
		return
	}
	set, err := keystore.LoadDenials(ctx, t.app.pool, time.Now())
	if err != nil {
		t.app.logger.Warn("token deny list not reloaded; keeping the last one", zap.Error(err))
		return
	}
	for _, row := range set.SetAside() {
		// The row's key names it for `civicgate tokens list`/SQL; the values are quoted and cut, so a hostile
		// row cannot forge log lines or flood them.
		t.app.logger.Error("token denial set aside: its table's rules refuse the row; it denies nothing",
			zap.String("kind", row.Kind), zap.String("issuer", row.Issuer), zap.String("value", row.Value),
			zap.String("problem", row.Problem))
	}
	t.app.metrics.deniesSetAside.Set(float64(set.Skipped()))
	t.denials.Store(&set)
	t.recheck(ctx)
}

// denialsExpiry reloads the deny list when its next entry expires, so an
// expired denial stops denying without a notification.
func (t *tokenAuth) denialsExpiry(ctx context.Context) {
	for {
		next := t.denials.Load().NextExpiry()
		wait := time.Minute
		if !next.IsZero() {
			wait = min(wait, max(time.Until(next), time.Second))
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
			if !next.IsZero() && !time.Now().Before(next) {
				t.reloadDenials(ctx)
			}
		}
	}
}
