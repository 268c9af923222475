package contract

// Long-lived exchanges (a graphql-transport-ws WebSocket, a graphql-sse event
// stream) outlive the request that admitted them. Two slots of the request
// value (request.go) let graphql_guard keep them to the same policy as a
// single POST (docs/design.md D22):
//
//   - civic_auth records a Watcher on every request it admits; graphql_guard
//     calls WatchCredential once an exchange turns long-lived and ends the
//     exchange when the watch fires (the key revoked, rotated out or
//     suspended, or its organization suspended), within 2 s;
//   - civic_rate_limit records a Charger to a WebSocket upgrade it admits;
//     graphql_guard charges every further operation (each subscribe message)
//     to the same key and policy;
//   - civic_rate_limit records an OperationRecorder to that upgrade when it
//     counts usage per operation; graphql_guard hands it each subscribe it
//     admits, as the operation a POST would have published (D70, D76).

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

// EntitlementWatch is implemented by a CredentialWatch that also follows
// the credential's families (its tier's entitlements) while it stays valid
// (docs/design.md D22, D80): a tier change of the key's organization made on
// any gateway's store reaches every instance's watches of its keys, within
// the watch's recheck interval or sooner through the store's notification.
// Callers type-assert a CredentialWatch to it; a watch without it (an access
// token's, a test's stand-in) only ever ends.
type EntitlementWatch interface {
	// Changed receives a signal (capacity 1, so signals pending together
	// merge into one) when Families changed; read Families after it.
	Changed() <-chan struct{}
	// Families is the credential's families as {civic.families} publishes
	// them (comma-separated, in the tier's order; "" for none): when the
	// watch started, then as last looked up.
	Families() string
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

// OperationRecorder counts an operation a long-lived exchange admitted after
// the request that opened it — a WebSocket's subscribe message — in the
// usage per operation of the key that opened it (docs/design.md D76). A
// POST, a GET and an event stream publish their operation on their own
// request (Request.SetGraphQL) instead.
type OperationRecorder interface {
	// RecordOperation counts one request of op (shared: read it, never
	// modify it) that spent cost points of the key's cost budget (0 without
	// one) and was admitted latency after its message arrived.
	RecordOperation(op *GraphQLOperation, cost int64, latency time.Duration)
	// RecordOperationError counts one error of op, which RecordOperation
	// counted when it was admitted at admitted: the upstream ended it with
	// an error (docs/design.md D83). It adds no request, cost or latency,
	// and lands on the row of the admission's hour.
	RecordOperationError(op *GraphQLOperation, admitted time.Time)
}
