package contract

// Long-lived exchanges (a graphql-transport-ws WebSocket, a graphql-sse event
// stream) outlive the request that admitted them. Two hand-offs, through the
// request context only, let graphql_guard keep them to the same policy as a
// single POST (docs/design.md D22):
//
//   - civic_auth attaches a Watcher to every request it admits; graphql_guard
//     calls WatchCredential once an exchange turns long-lived and ends the
//     exchange when the watch fires (the key revoked, rotated out or
//     suspended, or its organization suspended), within 2 s;
//   - civic_rate_limit attaches a Charger to a WebSocket upgrade it admits;
//     graphql_guard charges every further operation (each subscribe message)
//     to the same key and policy.

import (
	"context"
	"time"
)

// CredentialWatch follows one credential for one long-lived exchange.
type CredentialWatch interface {
	// Done is closed when the credential stops being valid, or after Stop.
	Done() <-chan struct{}
	// Reason is the client-facing message once Done is closed because the
	// credential stopped being valid: MsgKeyRevoked, MsgKeyRotated,
	// MsgInvalidKey, MsgWrongEnvironment or MsgOrgSuspended; "" before that
	// or after Stop.
	Reason() string
	// Stop ends the watch (the exchange ended); it may be called twice.
	Stop()
}

// Watcher starts watching the credential a request was admitted with.
type Watcher interface {
	WatchCredential() CredentialWatch
}

// Charger charges one more operation of a long-lived exchange to the rate
// limit that admitted it.
type Charger interface {
	// Charge takes one unit. allowed false: over the limit, retryAfter is
	// when one unit will be available. err: the limiter's store failed (the
	// limiter's own fail-open/closed setting already applied: err is only
	// returned when the operation must be refused).
	Charge(ctx context.Context) (allowed bool, retryAfter time.Duration, err error)
}

type watcherKey struct{}

type chargerKey struct{}

// WithWatcher returns a copy of ctx that carries w.
func WithWatcher(ctx context.Context, w Watcher) context.Context {
	return context.WithValue(ctx, watcherKey{}, w)
}

// WatcherFrom returns the Watcher stored by WithWatcher or WithBearerWatcher.
func WatcherFrom(ctx context.Context) (Watcher, bool) {
	switch v := ctx.Value(watcherKey{}).(type) {
	case Watcher:
		return v, v != nil
	case *bearerCtx:
		return v.watcher, v.watcher != nil
	}
	return nil, false
}

// WithCharger returns a copy of ctx that carries c.
func WithCharger(ctx context.Context, c Charger) context.Context {
	return context.WithValue(ctx, chargerKey{}, c)
}

// ChargerFrom returns the Charger stored by WithCharger.
func ChargerFrom(ctx context.Context) (Charger, bool) {
	c, ok := ctx.Value(chargerKey{}).(Charger)
	return c, ok && c != nil
}

// WithBearerWatcher is WithBearer and WithWatcher in one allocation (civic_auth
// does both on every request it admits).
func WithBearerWatcher(ctx context.Context, token string, w Watcher) context.Context {
	return &bearerCtx{Context: ctx, token: token, watcher: w}
}
