package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
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
func (s *Store) FanOut(ctx context.Context, now time.Time, batch int) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var last int64
		err := tx.QueryRow(ctx, `SELECT last_seq FROM civicgate.webhook_fanout FOR UPDATE SKIP LOCKED`).Scan(&last)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // another instance is fanning out
		}
		if err != nil {
			return fmt.Errorf("store: fan-out position: %w", err)
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, FeedLockKey); err != nil {
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
			if _, err := tx.Exec(ctx, `INSERT INTO civicgate.webhook_deliveries (endpoint_id, kind, event_id, event_seq, next_attempt_at, created_at)
				SELECT e.id, 'event', ce.event_id, ce.id, $3, $3
				FROM change_events ce JOIN civicgate.webhook_endpoints e
					ON e.status = 'active' AND ce.family = ANY(e.families) AND ce.id > e.start_seq
				WHERE ce.id > $1 AND ce.id <= $2
				ORDER BY ce.id
				ON CONFLICT DO NOTHING`, lo, *hi, now); err != nil {
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

// Job is one claimed delivery attempt.
type Job struct {
	DeliveryID int64
	Token      string // lease token: Finish must present it
	EndpointID string
	URL        string
	Keys       [][]byte // signing keys, newest first
	Kind       string   // event, replay or test
	EventID    string   // webhook-id
	Attempt    int      // 1-based number of this attempt
	Body       []byte
	Seq        int64  // change_events.id (0 for a ping)
	Family     string // "" for a ping
}

// Claim leases up to limit due deliveries for this instance until now+lease,
// never more than maxInFlight at a time per endpoint across all instances:
// endpoint rows are locked (FOR NO KEY UPDATE SKIP LOCKED) while counting and
// claiming, and deliveries are claimed with FOR UPDATE SKIP LOCKED, so two
// instances never lease the same attempt. A delivering row whose lease ran
// out (its instance died) is due again. Claiming counts the attempt.
func (s *Store) Claim(ctx context.Context, now time.Time, lease time.Duration, maxInFlight, limit int, render func(Event) ([]byte, error)) ([]Job, error) {
	var jobs []Job
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		type ep struct {
			id, url   string
			active    bool
			cur, prev []byte
			prevUntil *time.Time
		}
		rows, err := tx.Query(ctx, `SELECT e.id, e.url, e.status = 'active', e.secret_sealed, e.prev_secret_sealed, e.prev_secret_until
			FROM civicgate.webhook_endpoints e
			WHERE EXISTS (SELECT 1 FROM civicgate.webhook_deliveries d
				WHERE d.endpoint_id = e.id AND d.status IN ('pending', 'delivering') AND d.next_attempt_at <= $1
				  AND (d.status = 'pending' OR d.lease_until <= $1) AND (e.status = 'active' OR d.kind = 'test'))
			  AND (SELECT count(*) FROM civicgate.webhook_deliveries d
				WHERE d.endpoint_id = e.id AND d.status = 'delivering' AND d.lease_until > $1) < $3
			ORDER BY (SELECT min(d.next_attempt_at) FROM civicgate.webhook_deliveries d
				WHERE d.endpoint_id = e.id AND d.status IN ('pending', 'delivering')), e.id
			LIMIT $2
			FOR NO KEY UPDATE OF e SKIP LOCKED`, now, limit, maxInFlight)
		if err != nil {
			return fmt.Errorf("store: claim: %w", err)
		}
		var eps []ep
		for rows.Next() {
			var e ep
			if err := rows.Scan(&e.id, &e.url, &e.active, &e.cur, &e.prev, &e.prevUntil); err != nil {
				rows.Close()
				return fmt.Errorf("store: claim: %w", err)
			}
			eps = append(eps, e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: claim: %w", err)
		}
		for _, e := range eps {
			if len(jobs) >= limit {
				break
			}
			keys, err := s.signingKeys(e.id, e.cur, e.prev, e.prevUntil, now)
			if err != nil {
				return fmt.Errorf("store: claim: endpoint %s: %w", e.id, err)
			}
			rows, err := tx.Query(ctx, `WITH due AS (
					SELECT d.id FROM civicgate.webhook_deliveries d
					WHERE d.endpoint_id = $1 AND d.status IN ('pending', 'delivering') AND d.next_attempt_at <= $2
					  AND (d.status = 'pending' OR d.lease_until <= $2) AND ($3 OR d.kind = 'test')
					ORDER BY d.next_attempt_at, d.id
					LIMIT GREATEST(0, LEAST($5::int, $4::int - (SELECT count(*) FROM civicgate.webhook_deliveries
						WHERE endpoint_id = $1 AND status = 'delivering' AND lease_until > $2)))
					FOR UPDATE SKIP LOCKED)
				UPDATE civicgate.webhook_deliveries d
				SET status = 'delivering', attempts = d.attempts + 1, lease_token = gen_random_uuid(), lease_until = $6
				FROM due WHERE d.id = due.id
				RETURNING d.id, d.lease_token::text, d.kind, d.event_id::text, d.event_seq, d.payload, d.attempts`,
				e.id, now, e.active, maxInFlight, limit-len(jobs), now.Add(lease))
			if err != nil {
				return fmt.Errorf("store: claim: %w", err)
			}
			for rows.Next() {
				j := Job{EndpointID: e.id, URL: e.url, Keys: keys}
				var seq *int64
				if err := rows.Scan(&j.DeliveryID, &j.Token, &j.Kind, &j.EventID, &seq, &j.Body, &j.Attempt); err != nil {
					rows.Close()
					return fmt.Errorf("store: claim: %w", err)
				}
				if seq != nil {
					j.Body, j.Seq = nil, *seq
				}
				jobs = append(jobs, j)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return fmt.Errorf("store: claim: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.render(ctx, jobs, render)
}

// render fills the bodies of event jobs from change_events.
func (s *Store) render(ctx context.Context, jobs []Job, render func(Event) ([]byte, error)) ([]Job, error) {
	var seqs []int64
	for _, j := range jobs {
		if j.Seq != 0 {
			seqs = append(seqs, j.Seq)
		}
	}
	if len(seqs) == 0 {
		return jobs, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+eventColumns+` FROM change_events WHERE id = ANY($1)`, seqs)
	if err != nil {
		return nil, fmt.Errorf("store: render: %w", err)
	}
	evs, err := scanEvents(rows)
	if err != nil {
		return nil, err
	}
	bySeq := make(map[int64]Event, len(evs))
	for _, e := range evs {
		bySeq[e.Seq] = e
	}
	for i := range jobs {
		j := &jobs[i]
		if j.Seq == 0 {
			continue
		}
		e, ok := bySeq[j.Seq]
		if !ok {
			continue // pruned from the feed: Body stays nil; the worker dead-letters it
		}
		b, err := render(e)
		if err != nil {
			return nil, err
		}
		j.Body, j.Family = b, e.Family
	}
	return jobs, nil
}

// RenderEnvelope is the default body of an event delivery: its envelope as JSON.
func RenderEnvelope(e Event) ([]byte, error) {
	b, err := json.Marshal(e.Envelope())
	if err != nil {
		return nil, fmt.Errorf("store: render: %w", err)
	}
	return b, nil
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

// Prune deletes up to limit finished (delivered or dead-lettered)
// deliveries that finished before before, and returns how many it deleted.
func (s *Store) Prune(ctx context.Context, before time.Time, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM civicgate.webhook_deliveries WHERE id IN (
		SELECT id FROM civicgate.webhook_deliveries
		WHERE status IN ('delivered', 'failed') AND finished_at < $1 LIMIT $2)`, before, limit)
	if err != nil {
		return 0, fmt.Errorf("store: prune: %w", err)
	}
	return tag.RowsAffected(), nil
}
