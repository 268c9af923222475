package keystore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// OrgStatus is the status of organization org (OrgActive, OrgSuspended,
// …); pgx.ErrNoRows (wrapped) when the store has no such organization.
func OrgStatus(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, org string) (string, error) {
	var status string
	if err := q.QueryRow(ctx, `SELECT status FROM civicgate.organizations WHERE id = $1`, org).Scan(&status); err != nil {
		return "", fmt.Errorf("keystore: organization status: %w", err)
	}
	return status, nil
}
