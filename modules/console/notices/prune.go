package notices

import (
	"cmp"
	"context"
	"fmt"
	"time"
)

// Recorded notices are forgotten once their source can never report them
// due again (docs/design.md D82, "How long a notice is kept"): a key's
// expiry notice once the expiry is long past, a quota crossing's once it
// was marked mailed. A deprecation's is kept: its subject is a schema
// coordinate, and forgetting it would mail the same deprecation again.

// pruneMargin is kept beyond the moment a notice can no longer be due, so
// that a clock off by days, or a round that looked just before, finds it.
const pruneMargin = 30 * 24 * time.Hour

// pruneEvery is how often a Runner forgets old notices (a delete over the
// table, not worth a round's while).
const pruneEvery = time.Hour

// Retainer is a Source whose recorded notices may be forgotten Keep after
// they were recorded: its Due never reports a notice that old again.
type Retainer interface {
	Keep() time.Duration
}

// Keep implements Retainer: a notice is recorded at most Within before the
// key's expiry, and Due reports only expiries still to come.
func (s KeyExpiry) Keep() time.Duration { return cmp.Or(s.Within, DefaultExpiryWithin) + pruneMargin }

// Keep implements Retainer: a crossing is marked mailed in the transaction
// that records it, and Due reports only unmarked crossings.
func (Quota) Keep() time.Duration { return pruneMargin }

// prune forgets the notices of each retaining source recorded before now
// minus its Keep, at most once per pruneEvery; it returns how many.
func (r *Runner) prune(ctx context.Context, now time.Time) (int64, error) {
	if !r.pruned.IsZero() && now.Sub(r.pruned) < pruneEvery {
		return 0, nil
	}
	var total int64
	for _, src := range r.Sources {
		ret, ok := src.(Retainer)
		if !ok {
			continue
		}
		tag, err := r.Pool.Exec(ctx, `DELETE FROM civicgate.mail_notices WHERE kind = $1 AND created_at < $2`,
			src.Kind(), now.Add(-ret.Keep()))
		if err != nil {
			return total, fmt.Errorf("notices: forget old %s notices: %w", src.Kind(), err)
		}
		total += tag.RowsAffected()
	}
	r.pruned = now
	return total, nil
}
