package keystore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// OrgGrants returns, for each organization of ids the store holds, its name
// and its grant row, ended or not (Requests, Cost 0 and Until zero when it
// has none): what the console shows beside the tier's figures and what a
// quota mail names (docs/design.md D81, D82). Whether a grant is in force is
// the caller's comparison of Until with its clock, as Record.Granted does.
func OrgGrants(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, ids []string) (map[string]Grant, error) {
	rows, err := q.Query(ctx, `SELECT o.id, o.name, coalesce(g.requests, 0), coalesce(g.cost, 0),
			coalesce(g.until, 'epoch'), coalesce(g.created_at, 'epoch')
		FROM civicgate.organizations o LEFT JOIN civicgate.org_grants g ON g.org_id = o.id
		WHERE o.id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("keystore: organization grants: %w", err)
	}
	out := make(map[string]Grant, len(ids))
	var g Grant
	if _, err := pgx.ForEachRow(rows, []any{&g.OrgID, &g.Org, &g.Requests, &g.Cost, &g.Until, &g.CreatedAt}, func() error {
		if g.Requests == 0 && g.Cost == 0 {
			out[g.OrgID] = Grant{OrgID: g.OrgID, Org: g.Org}
			return nil
		}
		g.Until, g.CreatedAt = g.Until.UTC(), g.CreatedAt.UTC()
		out[g.OrgID] = g
		return nil
	}); err != nil {
		return nil, fmt.Errorf("keystore: organization grants: %w", err)
	}
	return out, nil
}
