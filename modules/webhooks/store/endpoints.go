package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/webhooks/secretbox"
	"github.com/civicgate/civicgate/modules/webhooks/signature"
)

// Store is the civic_webhooks database.
type Store struct {
	pool *pgxpool.Pool
	box  *secretbox.Box
	// traceparents: Claim reads change_events.traceparent (ReadTraceparents); noTraceparentUntil (unix ns)
	// is when to look for the column again after it was found missing.
	traceparents       bool
	noTraceparentUntil atomic.Int64
	// keyCheckedAt (unix ns, database clock; 0 = not yet) is when the key last
	// opened the key canary (CheckKey).
	keyCheckedAt atomic.Int64
}

// New returns a store over pool that seals endpoint secrets with box.
func New(pool *pgxpool.Pool, box *secretbox.Box) *Store {
	return &Store{pool: pool, box: box}
}

// Endpoint is a registered receiver (never with its secret).
type Endpoint struct {
	ID             string   `json:"id"`
	URL            string   `json:"url"`
	Families       []string `json:"families"`
	Description    string   `json:"description"`
	Status         string   `json:"status"`
	DisabledReason string   `json:"disabled_reason,omitempty"`
	// UnusableReason is why an endpoint with Status "unusable" was set aside
	// (one of the Reason* set aside constants; docs/design.md D39).
	UnusableReason string    `json:"unusable_reason,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	OrgID          string    `json:"-"`
}

// Endpoint statuses: active, disabled (its receiver answered 410) and
// unusable (set aside: see SetAside).
const (
	StatusActive   = "active"
	StatusDisabled = "disabled"
	StatusUnusable = "unusable"
)

const endpointColumns = `id, url, families, description, status, disabled_reason, unusable_reason, created_at, org_id`

func scanEndpoint(row pgx.Row) (Endpoint, error) {
	var e Endpoint
	err := row.Scan(&e.ID, &e.URL, &e.Families, &e.Description, &e.Status, &e.DisabledReason, &e.UnusableReason, &e.CreatedAt, &e.OrgID)
	if errors.Is(err, pgx.ErrNoRows) {
		return e, ErrNotFound
	}
	if err != nil {
		return e, fmt.Errorf("store: endpoint: %w", err)
	}
	e.CreatedAt = e.CreatedAt.UTC()
	return e, nil
}

func newEndpointID() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("store: random: %w", err)
	}
	return "we_" + hex.EncodeToString(b), nil
}

// ErrTooMany is returned by CreateEndpoint when org already has max endpoints.
var ErrTooMany = errors.New("store: too many webhook endpoints")

// EndpointSpec is what an endpoint is registered with.
type EndpointSpec struct {
	Org string // the organization ({civic.org}): every API query filters on it
	// Env is the key environment ({civic.env}) of the registering key: the
	// endpoint's entitlements are those of the organization's active keys in
	// it. "" = any environment.
	Env         string
	URL         string
	Families    []string
	Description string
}

// CreateEndpoint registers an endpoint (at most max per organization; 0 = no
// bound) and returns it with its new secret (shown to the caller once;
// stored sealed).
func (s *Store) CreateEndpoint(ctx context.Context, now time.Time, spec EndpointSpec, max int) (Endpoint, string, error) {
	if err := s.ensureKey(ctx); err != nil {
		return Endpoint{}, "", err
	}
	id, err := newEndpointID()
	if err != nil {
		return Endpoint{}, "", err
	}
	secret, err := signature.NewSecret()
	if err != nil {
		return Endpoint{}, "", err
	}
	sealed, err := s.box.Seal([]byte(secret), []byte(id))
	if err != nil {
		return Endpoint{}, "", err
	}
	var env *string
	if spec.Env != "" {
		env = &spec.Env
	}
	org := spec.Org
	var e Endpoint
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if max > 0 {
			// Serialize creations per organization so the bound holds.
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('civicgate.webhook_endpoints'), hashtext($1))`, org); err != nil {
				return fmt.Errorf("store: create endpoint: %w", err)
			}
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM civicgate.webhook_endpoints WHERE org_id = $1`, org).Scan(&n); err != nil {
				return fmt.Errorf("store: create endpoint: %w", err)
			}
			if n >= max {
				return ErrTooMany
			}
		}
		var err error
		e, err = scanEndpoint(tx.QueryRow(ctx, `INSERT INTO civicgate.webhook_endpoints
			(id, org_id, env, url, families, description, secret_sealed, start_seq, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, (SELECT coalesce(max(id), 0) FROM change_events), $8, $8)
			RETURNING `+endpointColumns, id, org, env, spec.URL, spec.Families, spec.Description, sealed, now))
		return err
	})
	if err != nil {
		return Endpoint{}, "", err
	}
	return e, secret, nil
}

// ListEndpoints returns org's endpoints, oldest first.
func (s *Store) ListEndpoints(ctx context.Context, org string) ([]Endpoint, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+endpointColumns+` FROM civicgate.webhook_endpoints
		WHERE org_id = $1 ORDER BY created_at, id`, org)
	if err != nil {
		return nil, fmt.Errorf("store: list endpoints: %w", err)
	}
	defer rows.Close()
	out := []Endpoint{}
	for rows.Next() {
		e, err := scanEndpoint(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list endpoints: %w", err)
	}
	return out, nil
}

// GetEndpoint returns org's endpoint id (ErrNotFound if absent or another's).
func (s *Store) GetEndpoint(ctx context.Context, org, id string) (Endpoint, error) {
	return scanEndpoint(s.pool.QueryRow(ctx, `SELECT `+endpointColumns+` FROM civicgate.webhook_endpoints
		WHERE id = $1 AND org_id = $2`, id, org))
}

// DeleteEndpoint removes org's endpoint id and its deliveries.
func (s *Store) DeleteEndpoint(ctx context.Context, org, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM civicgate.webhook_endpoints WHERE id = $1 AND org_id = $2`, id, org)
	if err != nil {
		return fmt.Errorf("store: delete endpoint: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// RotateSecret gives org's endpoint id a new secret and keeps signing with
// the current one as well until now+overlap (two signatures per delivery).
// A current secret the key cannot open is dropped instead of kept (it could
// never sign), and an endpoint set aside for it (ReasonSecret) is active
// again: the new secret is the way out (docs/design.md D39).
func (s *Store) RotateSecret(ctx context.Context, now time.Time, org, id string, overlap time.Duration) (string, error) {
	if err := s.ensureKey(ctx); err != nil {
		return "", err
	}
	secret, err := signature.NewSecret()
	if err != nil {
		return "", err
	}
	sealed, err := s.box.Seal([]byte(secret), []byte(id))
	if err != nil {
		return "", err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var cur []byte
		err := tx.QueryRow(ctx, `SELECT secret_sealed FROM civicgate.webhook_endpoints WHERE id = $1 AND org_id = $2 FOR UPDATE`,
			id, org).Scan(&cur)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("store: rotate secret: %w", err)
		}
		_, openErr := s.box.Open(cur, []byte(id))
		keep := openErr == nil
		if _, err := tx.Exec(ctx, `UPDATE civicgate.webhook_endpoints
			SET prev_secret_sealed = CASE WHEN $6 THEN secret_sealed END, prev_secret_until = CASE WHEN $6 THEN $3::timestamptz END,
				secret_sealed = $4, updated_at = $5, sealed_at = clock_timestamp(),
				status = CASE WHEN status = 'unusable' AND unusable_reason = $7 THEN 'active' ELSE status END,
				unusable_reason = CASE WHEN status = 'unusable' AND unusable_reason = $7 THEN '' ELSE unusable_reason END
			WHERE id = $1 AND org_id = $2`, id, org, now.Add(overlap), sealed, now, keep, ReasonSecret); err != nil {
			return fmt.Errorf("store: rotate secret: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return secret, nil
}

// signingKeys opens an endpoint's secrets: the current one, and the previous
// one while its overlap lasts.
func (s *Store) signingKeys(id string, cur, prev []byte, prevUntil *time.Time, now time.Time) ([][]byte, error) {
	sec, err := s.box.Open(cur, []byte(id))
	if err != nil {
		return nil, err
	}
	k, err := signature.Key(string(sec))
	if err != nil {
		return nil, err
	}
	keys := [][]byte{k}
	if prev != nil && prevUntil != nil && now.Before(*prevUntil) {
		psec, err := s.box.Open(prev, []byte(id))
		if err != nil {
			return nil, err
		}
		pk, err := signature.Key(string(psec))
		if err != nil {
			return nil, err
		}
		keys = append(keys, pk)
	}
	return keys, nil
}

// Ping is the data of a test delivery.
type Ping struct {
	EndpointID string `json:"endpoint_id"`
}

// Test schedules a "ping" delivery to org's endpoint id (one attempt) and
// returns its webhook-id.
func (s *Store) Test(ctx context.Context, now time.Time, org, id string, body func(eventID string) ([]byte, error)) (string, error) {
	eventID := uuid.NewString()
	b, err := body(eventID)
	if err != nil {
		return "", err
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO civicgate.webhook_deliveries (endpoint_id, kind, event_id, payload, next_attempt_at, created_at)
		SELECT id, 'test', $3, $4, $5, $5 FROM civicgate.webhook_endpoints WHERE id = $1 AND org_id = $2`, id, org, eventID, b, now)
	if err != nil {
		return "", fmt.Errorf("store: test delivery: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return "", ErrNotFound
	}
	return eventID, nil
}

// ReplayResult says what a replay scheduled.
type ReplayResult struct {
	Scheduled int   // events (re)scheduled
	LastSeq   int64 // id of the last event considered
	More      bool  // more events follow LastSeq (call again from it)
}

// SinceCreation, as Replay's after, replays the events recorded since the
// endpoint was registered (a replay without from_cursor).
const SinceCreation int64 = -1

// Replay schedules every event after seq (in the endpoint's families that
// are also in entitled, the caller's families now; at most max) for delivery
// to org's endpoint id again, with the same webhook-ids; after SinceCreation
// starts at the endpoint's registration (the last event recorded before its
// created_at), never before it. An event that still
// has a pending (or parked) delivery is not doubled: a pending one is made
// due now instead. A replay re-enables an endpoint disabled by 410 (the
// subscriber says the receiver is back) or set aside as unusable (if the
// cause remains, the next claim sets it aside again).
func (s *Store) Replay(ctx context.Context, now time.Time, org, id string, after int64, max int, entitled []string) (ReplayResult, error) {
	var res ReplayResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var families []string
		var created time.Time
		err := tx.QueryRow(ctx, `UPDATE civicgate.webhook_endpoints SET status = 'active', disabled_reason = '', unusable_reason = '', updated_at = $3
			WHERE id = $1 AND org_id = $2
			RETURNING ARRAY(SELECT f FROM unnest(families) f WHERE f = ANY($4::text[])), created_at`, id, org, now, entitled).Scan(&families, &created)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("store: replay: %w", err)
		}
		// Shared feed lock: no writer is between drawing ids and committing, so
		// this snapshot holds every event the fan-out will not push to the
		// re-enabled endpoint.
		if _, err := tx.Exec(ctx, contract.ChangeEventsSharedLockSQL); err != nil {
			return fmt.Errorf("store: replay: feed lock: %w", err)
		}
		if after == SinceCreation {
			// newest first from the primary key: reads only the events since
			// the registration (those the replay is about to schedule)
			if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT id FROM change_events WHERE occurred_at < $1
				ORDER BY id DESC LIMIT 1), 0)`, created).Scan(&after); err != nil {
				return fmt.Errorf("store: replay: registration point: %w", err)
			}
		}
		var last *int64
		err = tx.QueryRow(ctx, `WITH ev AS (
				SELECT id, event_id, family FROM change_events WHERE id > $2 AND family = ANY($3) ORDER BY id LIMIT $4),
			hurry AS (
				UPDATE civicgate.webhook_deliveries d SET next_attempt_at = $5
				FROM ev WHERE d.endpoint_id = $1 AND d.event_id = ev.event_id AND d.status = 'pending'
				RETURNING d.id),
			ins AS (
				INSERT INTO civicgate.webhook_deliveries (endpoint_id, kind, event_id, event_seq, family, next_attempt_at, created_at)
				SELECT $1, 'replay', ev.event_id, ev.id, ev.family, $5, $5 FROM ev
				WHERE NOT EXISTS (SELECT 1 FROM civicgate.webhook_deliveries d
					WHERE d.endpoint_id = $1 AND d.event_id = ev.event_id AND d.status IN ('pending', 'delivering', 'parked'))
				RETURNING id)
			SELECT (SELECT count(*) FROM ev), (SELECT max(id) FROM ev)`,
			id, after, families, max, now).Scan(&res.Scheduled, &last)
		if err != nil {
			return fmt.Errorf("store: replay: %w", err)
		}
		if last != nil {
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM change_events WHERE id > $1 AND family = ANY($2))`,
				*last, families).Scan(&res.More); err != nil {
				return fmt.Errorf("store: replay: %w", err)
			}
		}
		if last != nil {
			res.LastSeq = *last
		} else {
			res.LastSeq = after
		}
		return nil
	})
	return res, err
}

// Delivery is one row of an endpoint's deliveries list.
type Delivery struct {
	ID             int64  `json:"-"`
	EventID        string `json:"event_id"`
	Kind           string `json:"kind"`
	Status         string `json:"status"`
	Attempts       int    `json:"attempts"`
	LastStatusCode *int   `json:"last_status_code"`
	// LastError is the last failed attempt's cause (or why the delivery is
	// parked or cancelled): one of the documented set, null when none.
	LastError     *string    `json:"last_error"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	CreatedAt     time.Time  `json:"created_at"`
}

// lastErrorColumn is last_error as listed: NULL when empty, and a reason an
// older instance wrote in free text (during a rolling upgrade; migration 0003
// maps the stored ones) mapped onto the documented set like that migration.
const lastErrorColumn = `CASE WHEN last_error LIKE 'refused by the SSRF guard%' THEN 'refused address'
		WHEN last_error LIKE 'network error%' THEN 'connection'
		WHEN last_error ~ '^HTTP [0-9]{3}' THEN 'status ' || substring(last_error FROM '^HTTP ([0-9]{3})')
		WHEN last_error = 'bad URL' THEN 'bad url'
		ELSE nullif(last_error, '') END`

// Deliveries lists org's endpoint id's deliveries, newest first, with ids
// below before (0 = from the newest); more says whether older ones follow.
func (s *Store) Deliveries(ctx context.Context, org, id string, before int64, limit int) ([]Delivery, bool, error) {
	if _, err := s.GetEndpoint(ctx, org, id); err != nil {
		return nil, false, err
	}
	rows, err := s.pool.Query(ctx, `SELECT id, event_id::text, kind, status, attempts, last_status_code, `+lastErrorColumn+`,
			CASE WHEN status IN ('pending', 'delivering') THEN next_attempt_at END, created_at
		FROM civicgate.webhook_deliveries
		WHERE endpoint_id = $1 AND ($2::bigint = 0 OR id < $2::bigint) ORDER BY id DESC LIMIT $3`, id, before, limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("store: deliveries: %w", err)
	}
	defer rows.Close()
	out := []Delivery{}
	for rows.Next() {
		var d Delivery
		if err := rows.Scan(&d.ID, &d.EventID, &d.Kind, &d.Status, &d.Attempts, &d.LastStatusCode, &d.LastError, &d.NextAttemptAt, &d.CreatedAt); err != nil {
			return nil, false, fmt.Errorf("store: deliveries: %w", err)
		}
		if d.Status == "delivering" {
			d.Status = "pending"
		}
		if d.NextAttemptAt != nil {
			t := d.NextAttemptAt.UTC()
			d.NextAttemptAt = &t
		}
		d.CreatedAt = d.CreatedAt.UTC()
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("store: deliveries: %w", err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}
