package webhooks

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// Who may manage webhook endpoints (docs/design.md D43): every Service call
// passes admit, so the HTTP API and the organization console refuse the same
// callers for the same reasons — not only the route's civic_auth
// `require_family changes`, which the console never crosses.

// ManageFamily is the family that entitles a caller to the change feed and
// the webhook-endpoint API (docs/design.md D6).
const ManageFamily = "changes"

// ErrNoManageFamily is the ErrNotEntitled of a caller whose tier lacks
// ManageFamily itself (errors.Is(err, ErrNotEntitled) holds), so a front end
// can say which family is missing.
var ErrNoManageFamily = fmt.Errorf("%w (%s)", ErrNotEntitled, ManageFamily)

// ErrSuspended refuses every call for a suspended organization (the HTTP API
// answers 403 contract.BodyOrgSuspended, as civic_auth does).
var ErrSuspended = errors.New("webhooks: the organization is suspended")

// ErrReadOnly refuses a change by a caller who may only read (a console
// viewer); the HTTP API's callers are never read-only.
var ErrReadOnly = errors.New("webhooks: the caller may read endpoints but not change them")

// admit checks the rules every call shares, in civic_auth's order: an
// organization, not deleted (store.ErrNotFound) nor suspended, whose tier
// includes ManageFamily (ErrNoManageFamily), and for a change a caller who may
// change (ErrReadOnly).
func (s *Service) admit(ctx context.Context, c Caller, change bool) error {
	if c.Org == "" {
		return errNoOrg
	}
	status, err := s.app.orgStatus(ctx, c.Org)
	if err != nil {
		return err
	}
	switch status {
	case orgSuspended:
		return ErrSuspended
	case orgDeleted:
		return store.ErrNotFound
	}
	if !c.entitled(ManageFamily) {
		return ErrNoManageFamily
	}
	if change && c.ReadOnly {
		return ErrReadOnly
	}
	return nil
}

// Organization statuses of the key store (modules/auth/keystore).
const (
	orgActive    = "active"
	orgSuspended = "suspended"
	orgDeleted   = "deleted"
)

// orgStatus is org's status in the key store (civicgate.organizations).
// An organization the table does not hold — or a database without the
// table — is taken as active: its keys live elsewhere (a civic_auth keys
// file), and the key store that authenticated the caller checked them.
func (a *App) orgStatus(ctx context.Context, org string) (string, error) {
	var status string
	err := a.pool.QueryRow(ctx, `SELECT status FROM civicgate.organizations WHERE id = $1`, org).Scan(&status)
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows), errors.As(err, &pgErr) && pgErr.Code == "42P01": // undefined_table
		return orgActive, nil
	case err != nil:
		return "", fmt.Errorf("webhooks: organization status: %w", err)
	}
	return status, nil
}

// CallerOf is org as the webhook rules see it when no API key is at hand
// (the organization console): the families of the tiers — this app's tier
// lines, the ones civic_auth reads — of its live keys (active, or rotating
// inside their overlap) in env ("" = every environment), as an API key of the
// organization would carry. A tier the app does not configure entitles
// nothing (fail closed).
func (s *Service) CallerOf(ctx context.Context, org, env string) (Caller, error) {
	rows, err := s.app.pool.Query(ctx, `SELECT DISTINCT tier FROM civicgate.api_keys
		WHERE org_id = $1 AND ($2 = '' OR env = $2)
		  AND (status = 'active' OR (status = 'rotating' AND rotates_out_at > clock_timestamp()))
		ORDER BY tier`, org, env)
	if err != nil {
		return Caller{}, fmt.Errorf("webhooks: tiers of %s: %w", org, err)
	}
	tiers, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return Caller{}, fmt.Errorf("webhooks: tiers of %s: %w", org, err)
	}
	c := Caller{Org: org, Env: env}
	for _, t := range tiers {
		for _, f := range s.app.Tiers[t].Families {
			if !slices.Contains(c.Families, f) {
				c.Families = append(c.Families, f)
			}
		}
	}
	return c, nil
}

// KnowsTier reports whether this app's tier lines define tier (the console
// flags keys whose tier no loaded configuration defines).
func (a *App) KnowsTier(tier string) bool {
	_, ok := a.Tiers[tier]
	return ok
}

// eventFamilies is the change-event families in force (docs/design.md D72):
// the configured list, checked, or else every family a tier names but
// ManageFamily, sorted. The records backend's list is Caddyfile
// configuration (caddyfile/event-families.caddy); this package knows none.
func eventFamilies(configured []string, tiers map[string]TierConfig) ([]string, error) {
	if len(configured) > 0 {
		seen := map[string]bool{}
		for _, f := range configured {
			switch {
			case !tierFamilyRE.MatchString(f):
				return nil, fmt.Errorf("event_families: %q is not a family name", f)
			case f == ManageFamily:
				return nil, fmt.Errorf("event_families: %q is the family of the feed itself, not a change-event family", f)
			case seen[f]:
				return nil, fmt.Errorf("event_families: %q is listed twice", f)
			}
			seen[f] = true
		}
		return slices.Clone(configured), nil
	}
	var out []string
	for _, tc := range tiers {
		for _, f := range tc.Families {
			if f != ManageFamily && !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// EventFamilies is the change-event families in force, in the order the API
// and the console list them.
func (s *Service) EventFamilies() []string { return slices.Clone(s.app.eventFamilies) }
