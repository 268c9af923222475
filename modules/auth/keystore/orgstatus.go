package keystore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// OrgByIDOrName is the id and status (OrgActive, OrgSuspended, …) of the
// organization whose id, or else whose name, is org; pgx.ErrNoRows
// (wrapped) when the store has none.
func OrgByIDOrName(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, org string) (id, status string, err error) {
	if err := q.QueryRow(ctx, `SELECT id, status FROM civicgate.organizations WHERE id = $1 OR name = $1
		ORDER BY id = $1 DESC LIMIT 1`, org).Scan(&id, &status); err != nil {
		return "", "", fmt.Errorf("keystore: organization: %w", err)
	}
	return id, status, nil
}
