package persisted

import (
	"context"
	"errors"
)

// Store holds APQ registrations (hash → query text).
//
// Get reports ok=false with a nil error when the hash is simply unknown (the
// caller answers PersistedQueryNotFound); a non-nil error means the store
// could not be asked, and the caller decides what to answer.
//
// Put's caller has verified Sum(query) == h.
type Store interface {
	Get(ctx context.Context, h Hash) (query string, ok bool, err error)
	Put(ctx context.Context, h Hash, query string) error
}

// ErrTooLarge is wrapped by Put when one document is larger than the whole
// byte budget of a Memory.
var ErrTooLarge = errors.New("document larger than the store's byte budget")

// Interface guards
var (
	_ Store = (*Memory)(nil)
	_ Store = (*Redis)(nil)
)
