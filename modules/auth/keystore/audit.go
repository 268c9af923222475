package keystore

import (
	"context"
	"errors"
	"fmt"
	"os/user"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The audit log (civicgate.audit_log) records who changed an organization or
// its keys: the key commands and the organization console write it, the
// console's page and `civicgate audit` read it. It lives with the key store,
// which owns the organizations and keys it is about (docs/design.md D60).

// The roles an author of a change has, as the audit log records them; the
// console signs its members in with one (docs/operations.md "The
// organization console"). The key commands act as RoleOperator.
const (
	RoleViewer   = "viewer"   // reads the organization's pages
	RoleAdmin    = "admin"    // also issues, rotates and revokes keys and manages webhooks
	RoleOperator = "operator" // every organization; also suspends, resumes and changes tiers
)

// ValidRole reports whether r is one of the three roles.
func ValidRole(r string) bool { return r == RoleViewer || r == RoleAdmin || r == RoleOperator }

// AuditEntry is one change: who (actor and role), in which organization,
// what (action and target), when and from where.
type AuditEntry struct {
	ID         int64     `json:"id"`
	At         time.Time `json:"at"`
	Actor      string    `json:"actor"`
	Role       string    `json:"role"`
	OrgID      string    `json:"org_id,omitempty"`
	Org        string    `json:"org,omitempty"` // the organization's name (listing only)
	Action     string    `json:"action"`
	Target     string    `json:"target,omitempty"`
	Detail     string    `json:"detail,omitempty"`
	ClientAddr string    `json:"client_addr,omitempty"`
}

// Audit writes e (At, ID and Org are set by the database).
func Audit(ctx context.Context, pool *pgxpool.Pool, e AuditEntry) error {
	var org *string
	if e.OrgID != "" {
		org = &e.OrgID
	}
	if _, err := pool.Exec(ctx, `INSERT INTO civicgate.audit_log (actor, role, org_id, action, target, detail, client_addr)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, e.Actor, e.Role, org, e.Action, e.Target, e.Detail, e.ClientAddr); err != nil {
		return fmt.Errorf("keystore: audit: %w", err)
	}
	return nil
}

// AuditQuery selects audit entries: one organization's (OrgID) or every
// one ("" — operators and `civicgate audit`), newest first, with ids below
// Before (0: from the newest), entries at or after Since (zero: any).
type AuditQuery struct {
	OrgID  string
	Before int64
	Since  time.Time
	Limit  int
}

// ListAudit returns a page of entries and whether older ones follow.
func ListAudit(ctx context.Context, pool *pgxpool.Pool, q AuditQuery) ([]AuditEntry, bool, error) {
	if q.Limit <= 0 || q.Limit > 1000 {
		q.Limit = 100
	}
	rows, err := pool.Query(ctx, `SELECT a.id, a.at, a.actor, a.role, coalesce(a.org_id, ''), coalesce(o.name, ''),
			a.action, a.target, a.detail, a.client_addr
		FROM civicgate.audit_log a LEFT JOIN civicgate.organizations o ON o.id = a.org_id
		WHERE ($1 = '' OR a.org_id = $1) AND ($2::bigint = 0 OR a.id < $2) AND a.at >= $3
		ORDER BY a.id DESC LIMIT $4`, q.OrgID, q.Before, q.Since, q.Limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("keystore: audit log: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (AuditEntry, error) {
		var e AuditEntry
		err := r.Scan(&e.ID, &e.At, &e.Actor, &e.Role, &e.OrgID, &e.Org, &e.Action, &e.Target, &e.Detail, &e.ClientAddr)
		e.At = e.At.UTC()
		return e, err
	})
	if err != nil {
		return nil, false, fmt.Errorf("keystore: audit log: %w", err)
	}
	more := len(out) > q.Limit
	if more {
		out = out[:q.Limit]
	}
	return out, more, nil
}

// CLIActor is the audit log's actor for a command run from the shell:
// "cli:" and $USER, else the process's account, else "cli:unknown".
func CLIActor(getenv func(string) string) string {
	if u := getenv("USER"); u != "" {
		return "cli:" + u
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	return "cli:unknown"
}

// OrgIDByName returns the id of the organization named name (ErrNoSuchOrg if
// none), deleted ones included: their changes are audited too.
func OrgIDByName(ctx context.Context, pool *pgxpool.Pool, name string) (string, error) {
	var id string
	err := pool.QueryRow(ctx, `SELECT id FROM civicgate.organizations WHERE name = $1`, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrNoSuchOrg
	}
	if err != nil {
		return "", fmt.Errorf("keystore: organization: %w", err)
	}
	return id, nil
}

// KeyOrg returns the id of the organization the key with id belongs to
// (ErrNoSuchKey if none).
func KeyOrg(ctx context.Context, pool *pgxpool.Pool, id string) (string, error) {
	var org string
	err := pool.QueryRow(ctx, `SELECT org_id FROM civicgate.api_keys WHERE id = $1`, id).Scan(&org)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrNoSuchKey
	}
	if err != nil {
		return "", fmt.Errorf("keystore: key: %w", err)
	}
	return org, nil
}
