package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ErrNoOrg is returned by ResolveOrg for an organization the key store does not know.
var ErrNoOrg = errors.New("store: no such organization")

// ResolveOrg returns the id of the organization named (or with id) org in
// the key store's civicgate.organizations, as `civicgate keys` names them
// (a name first, then an id).
func (s *Store) ResolveOrg(ctx context.Context, org string) (string, error) {
	var id string
	err := s.pool.QueryRow(ctx, `SELECT id FROM civicgate.organizations WHERE name = $1 OR id = $1
		ORDER BY (name = $1) DESC LIMIT 1`, org).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrNoOrg
	}
	if err != nil {
		return "", fmt.Errorf("store: organization: %w", err)
	}
	return id, nil
}
