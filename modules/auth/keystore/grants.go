package keystore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A grant raises one organization's request quota and/or cost budget above
// its tier's until a time (docs/design.md D81). The key store keeps it beside
// the organization and hands it to the gateways with each key (Lookup); the
// gateway compares Until with its clock at every request, so the tier's
// figures return at the end without a command or a notification.

// MaxGrant bounds a grant's figures and MaxGrantSpan its end, so every store
// and header holds them.
const (
	MaxGrant     = int64(1) << 40
	MaxGrantSpan = 10 * 365 * 24 * time.Hour
)

// ErrNoGrant is returned by EndGrant for an organization without a running
// grant.
var ErrNoGrant = errors.New("keystore: the organization has no grant")

// Grant is an organization's grant: Requests replaces the quota of the tier's
// first rate (its other rates scaled alike), Cost the cost budget's points
// per its window; 0 keeps the tier's figure.
type Grant struct {
	OrgID     string    `json:"org_id"`
	Org       string    `json:"org"` // the organization's name (listing only)
	Requests  int64     `json:"requests,omitempty"`
	Cost      int64     `json:"cost,omitempty"`
	Until     time.Time `json:"until"`
	CreatedAt time.Time `json:"created_at"`
}

// Check refuses a grant that raises nothing, a figure out of range or an
// end not in (now, now+MaxGrantSpan].
func (g Grant) Check(now time.Time) error {
	switch {
	case g.Requests == 0 && g.Cost == 0:
		return errors.New("keystore: a grant needs a request quota or a cost budget")
	case g.Requests < 0 || g.Requests > MaxGrant || g.Cost < 0 || g.Cost > MaxGrant:
		return fmt.Errorf("keystore: a grant's figures are whole numbers from 1 to %d", MaxGrant)
	case !g.Until.After(now):
		return errors.New("keystore: a grant's end must be in the future")
	case g.Until.After(now.Add(MaxGrantSpan)):
		return errors.New("keystore: a grant's end is at most 10 years ahead")
	}
	return nil
}

// Active reports whether the grant is in force at now.
func (g Grant) Active(now time.Time) bool { return now.Before(g.Until) }

// SetGrant gives the organization org (its name) the grant g (its OrgID is
// set here), replacing any it had, and notifies the gateways so cached keys
// take the granted figures at once.
func SetGrant(ctx context.Context, pool *pgxpool.Pool, org string, g Grant) (Grant, error) {
	if err := g.Check(time.Now()); err != nil {
		return Grant{}, err
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		id, err := lockOrg(ctx, tx, org, false)
		if err != nil {
			return err
		}
		g.OrgID, g.Org = id, org
		if err := tx.QueryRow(ctx, `INSERT INTO civicgate.org_grants (org_id, requests, cost, until)
			VALUES ($1, $2, $3, $4)
			ON CONFLICT (org_id) DO UPDATE SET requests = $2, cost = $3, until = $4, created_at = now()
			RETURNING created_at`, id, nullable(g.Requests), nullable(g.Cost), g.Until.UTC()).Scan(&g.CreatedAt); err != nil {
			return fmt.Errorf("keystore: set grant: %w", err)
		}
		return notify(ctx, tx, "org:"+id)
	})
	g.Until, g.CreatedAt = g.Until.UTC(), g.CreatedAt.UTC()
	return g, err
}

// EndGrant ends the organization's grant now (ErrNoGrant when it has none
// running) and notifies the gateways.
func EndGrant(ctx context.Context, pool *pgxpool.Pool, org string) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		id, err := lockOrg(ctx, tx, org, false)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM civicgate.org_grants WHERE org_id = $1 AND until > now()`, id)
		if err != nil {
			return fmt.Errorf("keystore: end grant: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return ErrNoGrant
		}
		return notify(ctx, tx, "org:"+id)
	})
}

// ListGrants returns the grants still running at now (all of them with
// ended true, ended ones too), by organization name.
func ListGrants(ctx context.Context, pool *pgxpool.Pool, now time.Time, ended bool) ([]Grant, error) {
	rows, err := pool.Query(ctx, `SELECT g.org_id, o.name, coalesce(g.requests, 0), coalesce(g.cost, 0), g.until, g.created_at
		FROM civicgate.org_grants g JOIN civicgate.organizations o ON o.id = g.org_id
		WHERE $2 OR g.until > $1 ORDER BY o.name`, now, ended)
	if err != nil {
		return nil, fmt.Errorf("keystore: list grants: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Grant, error) {
		var g Grant
		err := r.Scan(&g.OrgID, &g.Org, &g.Requests, &g.Cost, &g.Until, &g.CreatedAt)
		g.Until, g.CreatedAt = g.Until.UTC(), g.CreatedAt.UTC()
		return g, err
	})
	if err != nil {
		return nil, fmt.Errorf("keystore: list grants: %w", err)
	}
	return out, nil
}

// AuditDetail is the grant as the audit log records it.
func (g Grant) AuditDetail() string {
	s := ""
	if g.Requests > 0 {
		s += fmt.Sprintf("requests %d, ", g.Requests)
	}
	if g.Cost > 0 {
		s += fmt.Sprintf("cost %d, ", g.Cost)
	}
	return s + "until " + g.Until.UTC().Format(time.RFC3339)
}

// nullable is n, or NULL for 0.
func nullable(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}
