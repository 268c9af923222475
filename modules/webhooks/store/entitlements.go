package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// AuthChannel is the channel the key store NOTIFYs when a key or an
// organization changes (modules/auth/keystore.Channel, copied: payloads
// "key:<hash>" and "org:<id>"). The sidecar LISTENs on it to park and resume
// deliveries at once.
const AuthChannel = "civicgate_auth"

// Tiers maps each tier name to the families its keys are entitled to: the
// same `tier <name> <rate> <families...>` lines civic_auth takes. Families
// that are not change-event families (changes) are ignored. The map is sent
// to PostgreSQL as a jsonb parameter, so each fan-out and claim statement
// decides on the organization's keys as they are when it runs.
type Tiers map[string][]string

// ErrNoTiers is returned by the delivery functions when no tier is
// configured: with no tier map, no organization is entitled to anything, and
// the store refuses rather than cancel every delivery.
var ErrNoTiers = errors.New("store: no tiers configured")

func (t Tiers) param() (string, error) {
	if len(t) == 0 {
		return "", ErrNoTiers
	}
	m := make(map[string][]string, len(t))
	for name, fams := range t {
		if fams == nil {
			fams = []string{} // never a JSON null: jsonb_array_elements_text refuses scalars
		}
		m[name] = fams
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("store: tiers: %w", err)
	}
	return string(b), nil
}

// Reasons recorded in last_error by the entitlement checks.
const (
	ReasonSuspended = "organization suspended"
	ReasonNoKey     = "organization has no active key"
	// ReasonNotEntitled is followed by the family.
	ReasonNotEntitled = "not entitled to family "
)

// endpointState is the body of a CTE (named ent by its users) over the
// endpoints matching where, with what the key store says about their
// organization when the statement runs:
//
//   - park_reason: NULL when deliveries may go out; ReasonSuspended when
//     civicgate.organizations says suspended; ReasonNoKey when the organization
//     is unknown or has no live key in the endpoint's environment.
//   - fams: the families of the tiers (the jsonb map in parameter tiers) of
//     the organization's live keys — active, or rotating and still inside
//     their overlap, which the gateway accepts — in the endpoint's
//     environment (any environment when the endpoint records none).
func endpointState(tiers, where string) string {
	return `SELECT e.id, e.org_id, e.url, e.status, e.families, e.start_seq,
			e.secret_sealed, e.prev_secret_sealed, e.prev_secret_until, e.sealed_at,
			CASE WHEN o.status = 'suspended' THEN '` + ReasonSuspended + `'
			     WHEN o.status IS DISTINCT FROM 'active' OR k.n = 0 THEN '` + ReasonNoKey + `' END AS park_reason,
			k.fams
		FROM civicgate.webhook_endpoints e
		LEFT JOIN civicgate.organizations o ON o.id = e.org_id
		CROSS JOIN LATERAL (
			SELECT count(DISTINCT k.id) AS n,
				coalesce(array_agg(DISTINCT f.family) FILTER (WHERE f.family IS NOT NULL), '{}') AS fams
			FROM civicgate.api_keys k
			LEFT JOIN LATERAL jsonb_array_elements_text(coalesce(` + tiers + `::jsonb -> k.tier, '[]'::jsonb)) AS f(family) ON true
			WHERE k.org_id = e.org_id AND (e.env IS NULL OR k.env = e.env)
			  AND (k.status = 'active' OR (k.status = 'rotating' AND k.rotates_out_at > clock_timestamp()))) k
		WHERE ` + where
}

// parkSQL parks the pending deliveries (and the delivering ones whose lease
// ran out) of the endpoints in ent whose organization may not receive any.
// Rows another transaction holds are skipped (the next round gets them).
func parkSQL(now string) string {
	return `UPDATE civicgate.webhook_deliveries d
		SET status = 'parked', last_error = p.reason, lease_token = NULL, lease_until = NULL
		FROM (SELECT x.id, ent.park_reason AS reason FROM ent JOIN civicgate.webhook_deliveries x ON x.endpoint_id = ent.id
			WHERE ent.park_reason IS NOT NULL AND x.status IN ('pending', 'delivering')
			  AND (x.status = 'pending' OR x.lease_until <= ` + now + `)
			FOR UPDATE OF x SKIP LOCKED) p
		WHERE d.id = p.id
		RETURNING d.id`
}

// cancelSQL cancels the pending and parked deliveries of the endpoints in ent
// whose family the organization is no longer entitled to (found through the
// (endpoint_id, family) index, for the families the endpoint was registered
// with and has lost: none, almost always).
func cancelSQL(now string) string {
	return `UPDATE civicgate.webhook_deliveries d
		SET status = 'cancelled', last_error = '` + ReasonNotEntitled + `' || d.family, finished_at = ` + now + `,
			lease_token = NULL, lease_until = NULL
		WHERE d.id IN (SELECT x.id FROM ent CROSS JOIN LATERAL unnest(ent.families) AS lost(family)
			JOIN civicgate.webhook_deliveries x ON x.endpoint_id = ent.id AND x.family = lost.family
			WHERE ent.park_reason IS NULL AND NOT lost.family = ANY(ent.fams) AND x.status IN ('pending', 'parked')
			FOR UPDATE OF x SKIP LOCKED)
		RETURNING d.id`
}

// Reconciled counts what Reconcile changed.
type Reconciled struct {
	Parked, Resumed, Cancelled int64
	// SetAside lists the endpoints of deleted organizations it set aside.
	SetAside []SetAside
}

// Changed reports whether Reconcile changed anything.
func (r Reconciled) Changed() bool {
	return r.Parked+r.Resumed+r.Cancelled > 0 || len(r.SetAside) > 0
}

// Reconcile brings every delivery in line with the key store: deliveries of
// an organization that is suspended or has no active key are parked, parked
// ones whose organization may receive again go back to pending (due at once),
// and pending or parked ones of a family the organization is no longer
// entitled to are cancelled. Claim enforces the same rules on what it
// claims; Reconcile makes them visible (and resumes) without waiting for a
// delivery to fall due. Rows other transactions hold are left for the next
// call. Deliveries written without a family (before migration 0003, or by an
// older instance) get it from change_events first. The endpoints of a
// deleted organization are set aside (ReasonOrgDeleted).
func (s *Store) Reconcile(ctx context.Context, now time.Time, tiers Tiers) (Reconciled, error) {
	tp, err := tiers.param()
	if err != nil {
		return Reconciled{}, err
	}
	var r Reconciled
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE civicgate.webhook_deliveries d SET family = ce.family
			FROM change_events ce
			WHERE d.id IN (SELECT x.id FROM civicgate.webhook_deliveries x
				WHERE x.family IS NULL AND x.kind IN ('event', 'replay') AND x.status IN ('pending', 'delivering', 'parked')
				FOR UPDATE SKIP LOCKED)
			  AND ce.id = d.event_seq`); err != nil {
			return fmt.Errorf("store: reconcile: %w", err)
		}
		var err error
		if r.SetAside, err = setAsideDeleted(ctx, tx, now); err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `WITH ent AS (`+endpointState("$1", "true")+`),
			parked AS (`+parkSQL("$2")+`),
			resumed AS (
				UPDATE civicgate.webhook_deliveries d SET status = 'pending', last_error = ''
				WHERE d.id IN (SELECT x.id FROM ent JOIN civicgate.webhook_deliveries x ON x.endpoint_id = ent.id
					WHERE ent.park_reason IS NULL AND x.status = 'parked' AND (x.family IS NULL OR x.family = ANY(ent.fams))
					FOR UPDATE OF x SKIP LOCKED)
				RETURNING d.id),
			cancelled AS (`+cancelSQL("$2")+`)
			SELECT (SELECT count(*) FROM parked), (SELECT count(*) FROM resumed), (SELECT count(*) FROM cancelled)`,
			tp, now).Scan(&r.Parked, &r.Resumed, &r.Cancelled)
		if err != nil {
			return fmt.Errorf("store: reconcile: %w", err)
		}
		return nil
	})
	return r, err
}
