package consolestore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// LinkTTL is how long a sign-in link from `civicgate console link` is valid.
const LinkTTL = 15 * time.Minute

// LinkSpec is what a sign-in link signs in as.
type LinkSpec struct {
	Org       string // organization name; "" only for an operator
	Email     string
	Role      string
	CreatedBy string // who made the link (the OS user running the CLI)
	TTL       time.Duration
}

// Link is a created sign-in link's token (shown once) and expiry.
type Link struct {
	Token     string
	OrgID     string
	ExpiresAt time.Time
}

// CreateLink stores a single-use sign-in link and returns its token.
func CreateLink(ctx context.Context, pool *pgxpool.Pool, spec LinkSpec) (Link, error) {
	spec.Email = strings.TrimSpace(spec.Email)
	if !keystore.ValidRole(spec.Role) {
		return Link{}, fmt.Errorf("consolestore: role %q is not viewer, admin or operator", spec.Role)
	}
	if spec.Email == "" || len(spec.Email) > 254 || !strings.Contains(spec.Email, "@") {
		return Link{}, fmt.Errorf("consolestore: %q is not an email address", spec.Email)
	}
	if spec.Org == "" && spec.Role != keystore.RoleOperator {
		return Link{}, errors.New("consolestore: a viewer or admin link needs an organization")
	}
	if spec.TTL <= 0 {
		spec.TTL = LinkTTL
	}
	tok, h, err := newToken()
	if err != nil {
		return Link{}, err
	}
	var orgID *string
	if spec.Org != "" {
		o, err := OrgByName(ctx, pool, spec.Org)
		if err != nil {
			return Link{}, err
		}
		orgID = &o.ID
	}
	var exp time.Time
	err = pool.QueryRow(ctx, `INSERT INTO civicgate.console_links (token_hash, org_id, email, role, created_by, expires_at)
		VALUES ($1, $2, $3, $4, $5, now() + $6::interval) RETURNING expires_at`,
		h, orgID, strings.ToLower(spec.Email), spec.Role, spec.CreatedBy, spec.TTL.String()).Scan(&exp)
	if err != nil {
		return Link{}, fmt.Errorf("consolestore: create link: %w", err)
	}
	l := Link{Token: tok, ExpiresAt: exp.UTC()}
	if orgID != nil {
		l.OrgID = *orgID
	}
	return l, nil
}

// ErrLinkRefused is returned for a sign-in link that is unknown, used,
// expired, or whose organization is deleted: one answer for all, so a
// caller learns nothing about which.
var ErrLinkRefused = errors.New("consolestore: sign-in link refused")

// ConsumeLink uses a sign-in link once and returns who it signs in.
func ConsumeLink(ctx context.Context, pool *pgxpool.Pool, token string) (Identity, error) {
	if token == "" || len(token) > 128 {
		return Identity{}, ErrLinkRefused
	}
	var id Identity
	var org *string
	err := pool.QueryRow(ctx, `UPDATE civicgate.console_links l SET used_at = now()
		WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()
		  AND (org_id IS NULL OR EXISTS (SELECT 1 FROM civicgate.organizations o WHERE o.id = l.org_id AND o.status <> 'deleted'))
		RETURNING email, org_id, role`, hashToken(token)).Scan(&id.Email, &org, &id.Role)
	if errors.Is(err, pgx.ErrNoRows) {
		return Identity{}, ErrLinkRefused
	}
	if err != nil {
		return Identity{}, fmt.Errorf("consolestore: use link: %w", err)
	}
	if org != nil {
		id.OrgID = *org
	}
	return id, nil
}
