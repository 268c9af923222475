package consolestore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// MaxOrgAdmins bounds the addresses OrgAdmins returns: a notice mail goes to
// each (docs/design.md D82), so an organization cannot make one notice a
// flood.
const MaxOrgAdmins = 20

// OrgAdmins returns the addresses the console knows as admins of
// organization orgID, sorted, at most MaxOrgAdmins: whoever signed it up
// (a finished sign-up), and the addresses of admin sign-in links and admin
// sessions not yet pruned (an operator's `console link --role admin`, an
// OIDC rule mapping to admin). Operators are nobody's admins here.
func OrgAdmins(ctx context.Context, pool *pgxpool.Pool, orgID string) ([]string, error) {
	rows, err := pool.Query(ctx, `SELECT DISTINCT lower(email) AS e FROM (
			SELECT email FROM civicgate.console_signups WHERE org_id = $1 AND status = 'done'
			UNION ALL SELECT email FROM civicgate.console_links WHERE org_id = $1 AND role = 'admin'
			UNION ALL SELECT email FROM civicgate.console_sessions WHERE org_id = $1 AND role = 'admin'
		) a ORDER BY e LIMIT $2`, orgID, MaxOrgAdmins)
	if err != nil {
		return nil, fmt.Errorf("consolestore: organization admins: %w", err)
	}
	admins, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("consolestore: organization admins: %w", err)
	}
	return admins, nil
}
