package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// A notice is an event about an organization rather than a record (such as a
// deprecated schema coordinate its keys use, docs/design.md D79): sent once
// per (organization, subject) to every active endpoint of the organization,
// whatever the endpoint's families, as a delivery of kind 'notice' whose body
// is stored with it (payload, as a test ping's). Its deliveries are claimed,
// signed, retried, parked and set aside exactly as change events'; a replay
// does not send it again (replay reads the change feed).

// KindNotice is the delivery kind of a notice.
const KindNotice = "notice"

// Notice is one (organization, subject) pair a caller may notify.
type Notice struct {
	Org     string
	Subject string
}

// Receivers returns the organizations that have an active endpoint: a
// caller that reads what to notify after asking this sends only what was
// counted once the endpoint existed (docs/design.md D79).
func (s *Store) Receivers(ctx context.Context) (map[string]bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT org_id FROM civicgate.webhook_endpoints WHERE status = 'active'`)
	if err != nil {
		return nil, fmt.Errorf("store: receivers: %w", err)
	}
	orgs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: receivers: %w", err)
	}
	out := make(map[string]bool, len(orgs))
	for _, o := range orgs {
		out[o] = true
	}
	return out, nil
}

// Unnotified returns the pairs of ps (in their order) that have no notice yet
// and whose organization has an active endpoint to send one to: one query,
// so a caller asks Notify only for those.
func (s *Store) Unnotified(ctx context.Context, ps []Notice) ([]Notice, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	orgs := make([]string, len(ps))
	subjects := make([]string, len(ps))
	for i, p := range ps {
		orgs[i], subjects[i] = p.Org, p.Subject
	}
	rows, err := s.pool.Query(ctx, `SELECT p.i FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS p(org_id, subject, i)
		WHERE NOT EXISTS (SELECT 1 FROM civicgate.webhook_notices n WHERE n.org_id = p.org_id AND n.subject = p.subject)
		  AND EXISTS (SELECT 1 FROM civicgate.webhook_endpoints e WHERE e.org_id = p.org_id AND e.status = 'active')
		ORDER BY p.i`, orgs, subjects)
	if err != nil {
		return nil, fmt.Errorf("store: unnotified: %w", err)
	}
	idx, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("store: unnotified: %w", err)
	}
	out := make([]Notice, len(idx))
	for j, i := range idx {
		out[j] = ps[i-1]
	}
	return out, nil
}

// errNoEndpoint rolls back a notice that would reach nobody.
var errNoEndpoint = errors.New("store: notify: no active endpoint")

// Notify sends org the notice of subject once: in one transaction it records
// (org, subject) unless already recorded and, when it did, schedules one
// delivery of kind notice to every active endpoint of org, due at now, with
// the envelope {id, type, cursor: null, occurred_at: now, data} as body (the
// webhook-id is the notice's own). It reports whether the notice is new. An
// organization without an active endpoint gets nothing recorded (false): its
// notice is sent by a later call, once it has one. Concurrent callers (several
// sidecars) send it once: the primary key decides.
//
// Deliveries of a suspended organization are parked by the claim as change
// events' are, and go out when it may receive again.
func (s *Store) Notify(ctx context.Context, now time.Time, org, subject, typ string, data any) (bool, error) {
	eventID := uuid.NewString()
	body, err := json.Marshal(Envelope{ID: eventID, Type: typ, OccurredAt: now.UTC(), Data: data})
	if err != nil {
		return false, fmt.Errorf("store: notify: %w", err)
	}
	var sent bool
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO civicgate.webhook_notices (org_id, subject, event_id, payload, created_at)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, org, subject, eventID, body, now)
		if err != nil {
			return fmt.Errorf("store: notify: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return nil // notified before
		}
		tag, err = tx.Exec(ctx, `INSERT INTO civicgate.webhook_deliveries (endpoint_id, kind, event_id, payload, next_attempt_at, created_at)
			SELECT id, '`+KindNotice+`', $2, $3, $4, $4 FROM civicgate.webhook_endpoints
			WHERE org_id = $1 AND status = 'active' ORDER BY id`, org, eventID, body, now)
		if err != nil {
			return fmt.Errorf("store: notify: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return errNoEndpoint
		}
		sent = true
		return nil
	})
	if errors.Is(err, errNoEndpoint) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return sent, nil
}
