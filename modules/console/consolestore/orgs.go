package consolestore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Org is an organization as the console lists it.
type Org struct {
	ID        string
	Name      string
	Status    string // active, suspended or deleted
	CreatedAt time.Time
	// UsableKeys counts the keys accepted now, in either environment: active,
	// or rotating with its overlap not yet ended (a rotating key past its
	// rotates_out_at is refused though its status is not rewritten), and not
	// expired (docs/design.md D71).
	UsableKeys int
	Tiers      []string // the tiers of its usable keys, sorted
}

// usableKey is the condition on api_keys k of a key accepted now, as
// LiveKeys and the gateways' key check have it.
const usableKey = `((k.status = 'active' OR (k.status = 'rotating' AND k.rotates_out_at > now()))
	AND (k.expires_at IS NULL OR k.expires_at > now()))`

const orgColumns = `o.id, o.name, o.status, o.created_at,
	(SELECT count(*) FROM civicgate.api_keys k WHERE k.org_id = o.id AND ` + usableKey + `),
	coalesce((SELECT array_agg(DISTINCT k.tier ORDER BY k.tier) FROM civicgate.api_keys k
		WHERE k.org_id = o.id AND ` + usableKey + `), '{}')`

func scanOrg(row pgx.Row) (Org, error) {
	var o Org
	err := row.Scan(&o.ID, &o.Name, &o.Status, &o.CreatedAt, &o.UsableKeys, &o.Tiers)
	if errors.Is(err, pgx.ErrNoRows) {
		return o, ErrNotFound
	}
	if err != nil {
		return o, fmt.Errorf("consolestore: organization: %w", err)
	}
	o.CreatedAt = o.CreatedAt.UTC()
	return o, nil
}

// GetOrg returns the organization with id (ErrNotFound if none).
func GetOrg(ctx context.Context, pool *pgxpool.Pool, id string) (Org, error) {
	return scanOrg(pool.QueryRow(ctx, `SELECT `+orgColumns+` FROM civicgate.organizations o WHERE o.id = $1`, id))
}

// OrgByName returns the organization named name (ErrNotFound if none).
func OrgByName(ctx context.Context, pool *pgxpool.Pool, name string) (Org, error) {
	return scanOrg(pool.QueryRow(ctx, `SELECT `+orgColumns+` FROM civicgate.organizations o WHERE o.name = $1`, name))
}

// ListOrgs returns organizations by name after after (a page of limit) and
// whether more follow; deleted ones are left out. The usable keys are counted
// for the page's organizations only, through the live-key index.
func ListOrgs(ctx context.Context, pool *pgxpool.Pool, after string, limit int) ([]Org, bool, error) {
	rows, err := pool.Query(ctx, `WITH page AS (
			SELECT id, name, status, created_at FROM civicgate.organizations
			WHERE status <> 'deleted' AND name > $1 ORDER BY name LIMIT $2)
		SELECT p.id, p.name, p.status, p.created_at, count(k.id),
			coalesce(array_agg(DISTINCT k.tier ORDER BY k.tier) FILTER (WHERE k.id IS NOT NULL), '{}')
		FROM page p LEFT JOIN civicgate.api_keys k ON k.org_id = p.id AND `+usableKey+`
		GROUP BY p.id, p.name, p.status, p.created_at ORDER BY p.name`, after, limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("consolestore: organizations: %w", err)
	}
	defer rows.Close()
	var out []Org
	for rows.Next() {
		o, err := scanOrg(rows)
		if err != nil {
			return nil, false, err
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("consolestore: organizations: %w", err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}
