package auth

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

// DefaultWatchInterval is how often watched credentials are looked up again
// when no notification asked for it (watch_interval).
const DefaultWatchInterval = time.Second

// maxRecheckLookups bounds the store lookups one recheck round runs at once:
// half the PostgreSQL pool's 8 connections, the rest stay for requests.
const maxRecheckLookups = 4

// recheckResult is the outcome of looking one watched key up again.
type recheckResult struct {
	reason string // "": still valid
	err    error  // the store failed: the watches stay open
	// families of the key's tier now, when still valid (familiesOf, as the
	// request path publishes them).
	families string
}

// watchLoop rechecks watched credentials until ctx ends: those named by a
// notification (invalidate) at once, all of them every interval.
func (a *App) watchLoop(ctx context.Context) {
	t := time.NewTicker(a.watchInterval)
	defer t.Stop()
	var lastErrLog time.Time
	for {
		var hs []keystore.Hash
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			hs = a.watches.due(true)
		case <-a.watches.kick:
			hs = a.watches.due(false)
		}
		failed, err := a.recheck(ctx, hs)
		if failed > 0 && ctx.Err() == nil && time.Since(lastErrLog) >= a.watchInterval {
			lastErrLog = time.Now()
			a.logger.Warn("key store unavailable while rechecking watched credentials; their exchanges stay open",
				zap.Int("keys", failed), zap.Error(err))
		}
		a.watches.rounds.Add(1)
	}
}

// recheck looks each hash up in the store (not the cache) and fires the
// watches of those no longer valid; the watches of a key still valid whose
// families changed (its organization's tier: docs/design.md D80) are
// signalled instead. It returns how many lookups failed and
// the first failure.
func (a *App) recheck(ctx context.Context, hs []keystore.Hash) (failed int, firstErr error) {
	results := make([]recheckResult, len(hs))
	var next atomic.Int64
	work := func() {
		for i := int(next.Add(1) - 1); i < len(hs); i = int(next.Add(1) - 1) {
			results[i] = a.recheckOne(ctx, hs[i])
		}
	}
	if len(hs) <= 1 {
		work()
	} else {
		var wg sync.WaitGroup
		for range min(len(hs), maxRecheckLookups) {
			wg.Go(work)
		}
		wg.Wait()
	}
	for i, res := range results {
		switch {
		case res.err != nil:
			if failed == 0 {
				firstErr = res.err
			}
			failed++
		case res.reason != "":
			a.watches.fire(hs[i], res.reason)
		default:
			a.watches.refamily(hs[i], res.families)
		}
	}
	return failed, firstErr
}

// recheckOne looks h up, bounded by the lookup timeout; concurrent rechecks of
// one hash share one lookup.
func (a *App) recheckOne(ctx context.Context, h keystore.Hash) recheckResult {
	v, _, _ := a.recheckFlight.Do(string(h[:]), func() (any, error) {
		lctx, cancel := context.WithTimeout(ctx, a.timeout)
		defer cancel()
		rec, err := a.store.lookup(lctx, h)
		switch {
		case errors.Is(err, keystore.ErrNotFound):
			return recheckResult{reason: contract.MsgInvalidKey}, nil
		case err != nil:
			return recheckResult{err: err}, nil
		}
		if reason := a.invalidReason(rec); reason != "" {
			return recheckResult{reason: reason}, nil
		}
		return recheckResult{families: familiesOf(a.tierOf(rec))}, nil
	})
	return v.(recheckResult)
}

// invalidReason is the message civic_auth would refuse rec with now for a
// reason that ends an exchange it admitted ("" if none): the key's status,
// environment and organization. (Tier and family checks are not repeated: a
// tier change does not end an admitted exchange; recheck reports it to the
// watches as a change of families.)
func (a *App) invalidReason(rec keystore.Record) string {
	switch rec.EffectiveStatus(a.now()) { // a rotating key's overlap ends at its deadline, a key at its expiry
	case keystore.StatusActive, keystore.StatusRotating:
	case keystore.StatusExpired:
		return contract.MsgKeyExpired
	case keystore.StatusRevoked:
		return contract.MsgKeyRevoked
	case keystore.StatusRotated:
		return contract.MsgKeyRotated
	default:
		return contract.MsgInvalidKey
	}
	if rec.Env != a.Environment {
		return contract.MsgWrongEnvironment
	}
	if rec.OrgStatus == keystore.OrgDeleted {
		return contract.MsgKeyRevoked
	}
	if rec.OrgStatus != keystore.OrgActive {
		return contract.MsgOrgSuspended
	}
	return ""
}
