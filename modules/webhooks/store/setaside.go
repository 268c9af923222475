package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Reasons an endpoint is set aside as unusable (docs/design.md D39): its
// unusable_reason and the last_error of the deliveries failed with it. Never
// a secret, a key, a URL or an address (the log line carries the detail).
const (
	ReasonSecret     = "endpoint secret cannot be opened with the sealing key"
	ReasonURL        = "endpoint url no longer allowed"
	ReasonOrgDeleted = "organization deleted"
)

// Kinds of set-aside (the metric's label: low cardinality).
const (
	KindSecret       = "secret"
	KindURL          = "url"
	KindOrganization = "organization"
)

// deferFor is how long the due deliveries of an endpoint whose secret was
// sealed after this process checked its key wait before they are tried again
// (see SetAside.Deferred).
const deferFor = time.Minute

// SetAside reports an endpoint that could not be used.
type SetAside struct {
	EndpointID string
	Kind       string // KindSecret, KindURL or KindOrganization
	Reason     string // ReasonSecret, ReasonURL or ReasonOrgDeleted
	// Detail is for the log only: why the URL check refused (never a secret).
	Detail string
	// Failed is how many of its deliveries were failed with Reason.
	Failed int64
	// Marked is false when the endpoint was unusable already (a test ping
	// of an unusable endpoint): count and log only transitions.
	Marked bool
	// Deferred: not set aside, because its secret was sealed after this
	// process checked its key (a process holding a newer key may have sealed
	// it: docs/design.md D39); its due deliveries wait deferFor.
	Deferred bool
}

// setAside marks endpoint id unusable for reason and fails its pending,
// parked and expired-lease deliveries, and those this transaction claimed
// (claimed: their ids; the claim's attempt is taken back, nothing was sent).
// Deliveries another instance holds a live lease on finish as they will.
func setAside(ctx context.Context, tx pgx.Tx, now time.Time, u *SetAside, claimed []int64) error {
	tag, err := tx.Exec(ctx, `UPDATE civicgate.webhook_endpoints SET status = 'unusable', unusable_reason = $2, updated_at = $3
		WHERE id = $1 AND (status <> 'unusable' OR unusable_reason <> $2)`, u.EndpointID, u.Reason, now)
	if err != nil {
		return fmt.Errorf("store: set aside %s: %w", u.EndpointID, err)
	}
	u.Marked = tag.RowsAffected() > 0
	tag, err = tx.Exec(ctx, `UPDATE civicgate.webhook_deliveries
		SET status = 'failed', last_error = $2, finished_at = $3, lease_token = NULL, lease_until = NULL,
			attempts = attempts - coalesce(id = ANY($4::bigint[]), false)::int
		WHERE endpoint_id = $1 AND (status IN ('pending', 'parked')
			OR (status = 'delivering' AND (lease_until <= $3 OR coalesce(id = ANY($4::bigint[]), false))))`,
		u.EndpointID, u.Reason, now, claimed)
	if err != nil {
		return fmt.Errorf("store: set aside %s: %w", u.EndpointID, err)
	}
	u.Failed = tag.RowsAffected()
	return nil
}

// deferClaimed gives back the deliveries this transaction claimed for an
// endpoint it may not judge (SetAside.Deferred), due again after deferFor.
func deferClaimed(ctx context.Context, tx pgx.Tx, now time.Time, claimed []int64) error {
	if _, err := tx.Exec(ctx, `UPDATE civicgate.webhook_deliveries
		SET status = 'pending', attempts = attempts - 1, lease_token = NULL, lease_until = NULL, next_attempt_at = $2
		WHERE id = ANY($1::bigint[])`, claimed, now.Add(deferFor)); err != nil {
		return fmt.Errorf("store: defer deliveries: %w", err)
	}
	return nil
}

// setAsideDeleted sets aside every endpoint of a deleted organization (the
// key store's DeleteOrg removes them when the webhook tables exist; these
// are the ones that escaped it) with their deliveries.
func setAsideDeleted(ctx context.Context, tx pgx.Tx, now time.Time) ([]SetAside, error) {
	rows, err := tx.Query(ctx, `SELECT e.id FROM civicgate.webhook_endpoints e
		JOIN civicgate.organizations o ON o.id = e.org_id
		WHERE o.status = 'deleted' AND (e.status <> 'unusable' OR e.unusable_reason <> $1
			OR EXISTS (SELECT 1 FROM civicgate.webhook_deliveries x WHERE x.endpoint_id = e.id AND x.status IN ('pending', 'parked')))
		ORDER BY e.id
		FOR UPDATE OF e SKIP LOCKED`, ReasonOrgDeleted)
	if err != nil {
		return nil, fmt.Errorf("store: set aside: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: set aside: %w", err)
	}
	out := make([]SetAside, 0, len(ids))
	for _, id := range ids {
		u := SetAside{EndpointID: id, Kind: KindOrganization, Reason: ReasonOrgDeleted}
		if err := setAside(ctx, tx, now, &u, nil); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}
