package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/modules/contract"
)

// FanOut turns the next events (at most batch) into deliveries, one per
// active endpoint whose families include the event's, and advances the
// fan-out position. Only one instance fans out at a time (the position row is
// locked with SKIP LOCKED; the others return 0 at once). It returns how many
// events it consumed.
//
// The events are read while holding the feed lock in shared mode: no writer
// that follows the change_events contract can be between drawing ids and
// committing then, so every id up to the newest visible one is final and the
// position can never pass an event that commits later.
//
// An event becomes a delivery only for an endpoint whose organization may
// receive (not suspended, an active key) and is entitled to the event's
// family now (tiers, see endpointState): the same statement decides.
// Events fanned out while that is not so are not delivered later (replay).
func (s *Store) FanOut(ctx context.Context, now time.Time, batch int, tiers Tiers) (int, error) {
	tp, err := tiers.param()
	if err != nil {
		return 0, err
	}
	var n int
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var last int64
		err := tx.QueryRow(ctx, `SELECT last_seq FROM civicgate.webhook_fanout FOR UPDATE SKIP LOCKED`).Scan(&last)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // another instance is fanning out
		}
		if err != nil {
			return fmt.Errorf("store: fan-out position: %w", err)
		}
		if _, err := tx.Exec(ctx, contract.ChangeEventsSharedLockSQL); err != nil {
			return fmt.Errorf("store: fan-out: feed lock: %w", err)
		}
		// Events older than every active endpoint are pushed to none: skip them.
		var floor *int64
		if err := tx.QueryRow(ctx, `SELECT min(start_seq) FROM civicgate.webhook_endpoints WHERE status = 'active'`).Scan(&floor); err != nil {
			return fmt.Errorf("store: fan-out: %w", err)
		}
		lo := last
		if floor == nil {
			var newest int64
			if err := tx.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM change_events`).Scan(&newest); err != nil {
				return fmt.Errorf("store: fan-out: %w", err)
			}
			lo = max(lo, newest)
		} else {
			lo = max(lo, *floor)
		}
		var hi *int64
		if err := tx.QueryRow(ctx, `SELECT max(id), count(*) FROM (SELECT id FROM change_events WHERE id > $1 ORDER BY id LIMIT $2) s`,
			lo, batch).Scan(&hi, &n); err != nil {
			return fmt.Errorf("store: fan-out: %w", err)
		}
		if hi != nil {
			if _, err := tx.Exec(ctx, `WITH ent AS (`+endpointState("$4", "e.status = 'active'")+`)
				INSERT INTO civicgate.webhook_deliveries (endpoint_id, kind, event_id, event_seq, family, next_attempt_at, created_at)
				SELECT ent.id, 'event', ce.event_id, ce.id, ce.family, $3, $3
				FROM change_events ce JOIN ent
					ON ent.park_reason IS NULL AND ce.family = ANY(ent.families) AND ce.family = ANY(ent.fams) AND ce.id > ent.start_seq
				WHERE ce.id > $1 AND ce.id <= $2
				ORDER BY ce.id
				ON CONFLICT DO NOTHING`, lo, *hi, now, tp); err != nil {
				return fmt.Errorf("store: fan-out: %w", err)
			}
			lo = *hi
		}
		if lo != last {
			if _, err := tx.Exec(ctx, `UPDATE civicgate.webhook_fanout SET last_seq = $1`, lo); err != nil {
				return fmt.Errorf("store: fan-out: %w", err)
			}
		}
		return nil
	})
	return n, err
}

// Outcome is how an attempt ended.
type Outcome struct {
	Status     string    // pending (retry at NextAt), delivered or failed (dead-lettered)
	NextAt     time.Time // pending only
	StatusCode int       // 0: no HTTP response
	Error      string    // last_error: one of the documented causes (README "Delivery"), never a raw error
	Disable    bool      // the receiver answered 410: disable the endpoint (DisabledBy410)
}

// DisabledBy410 is the disabled_reason of an endpoint whose receiver answered 410.
const DisabledBy410 = "HTTP 410: endpoint disabled"

// ErrLeaseLost is returned by Finish when the lease was no longer ours (it
// expired and another instance claimed the delivery).
var ErrLeaseLost = errors.New("store: delivery lease lost")

// Finish records the outcome of a claimed attempt.
func (s *Store) Finish(ctx context.Context, now time.Time, j Job, o Outcome) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var code *int
		if o.StatusCode != 0 {
			code = &o.StatusCode
		}
		next := now
		if o.Status == "pending" {
			next = o.NextAt
		}
		var finished *time.Time
		if o.Status != "pending" {
			finished = &now
		}
		tag, err := tx.Exec(ctx, `UPDATE civicgate.webhook_deliveries
			SET status = $3, next_attempt_at = $4, last_status_code = $5, last_error = $6, finished_at = $7,
				lease_token = NULL, lease_until = NULL
			WHERE id = $1 AND lease_token = $2::uuid`, j.DeliveryID, j.Token, o.Status, next, code, o.Error, finished)
		if err != nil {
			return fmt.Errorf("store: finish: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return ErrLeaseLost
		}
		if o.Disable {
			if _, err := tx.Exec(ctx, `UPDATE civicgate.webhook_endpoints SET status = 'disabled', disabled_reason = $2, updated_at = $3
				WHERE id = $1`, j.EndpointID, DisabledBy410, now); err != nil {
				return fmt.Errorf("store: finish: %w", err)
			}
		}
		return nil
	})
}

// Renew extends the lease of a claimed attempt that is still running to
// until. It returns ErrLeaseLost when the attempt is no longer this job's (it
// was finished, or its lease ran out and another instance claimed it).
func (s *Store) Renew(ctx context.Context, j Job, until time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE civicgate.webhook_deliveries SET lease_until = $3
		WHERE id = $1 AND lease_token = $2::uuid AND status = 'delivering'`, j.DeliveryID, j.Token, until)
	if err != nil {
		return fmt.Errorf("store: renew: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrLeaseLost
	}
	return nil
}

// Lag returns how many events the fan-out is behind the newest event, and
// the age of the oldest delivery still pending.
func (s *Store) Lag(ctx context.Context, now time.Time) (events int64, oldest time.Duration, err error) {
	var created *time.Time
	err = s.pool.QueryRow(ctx, `SELECT greatest(0, (SELECT coalesce(max(id), 0) FROM change_events) -
			(SELECT last_seq FROM civicgate.webhook_fanout)),
		(SELECT min(d.created_at) FROM civicgate.webhook_deliveries d JOIN civicgate.webhook_endpoints e ON e.id = d.endpoint_id
			WHERE d.status IN ('pending', 'delivering') AND e.status = 'active')`).Scan(&events, &created)
	if err != nil {
		return 0, 0, fmt.Errorf("store: lag: %w", err)
	}
	if created != nil && now.After(*created) {
		oldest = now.Sub(*created)
	}
	return events, oldest, nil
}

// Prune deletes up to limit finished (delivered, dead-lettered or cancelled)
// deliveries that finished before before, and returns how many it deleted.
func (s *Store) Prune(ctx context.Context, before time.Time, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM civicgate.webhook_deliveries WHERE id IN (
		SELECT id FROM civicgate.webhook_deliveries
		WHERE status IN ('delivered', 'failed', 'cancelled') AND finished_at < $1 LIMIT $2)`, before, limit)
	if err != nil {
		return 0, fmt.Errorf("store: prune: %w", err)
	}
	return tag.RowsAffected(), nil
}
