package consolestore

import (
	"context"
	"fmt"
	"os/user"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

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
		return fmt.Errorf("consolestore: audit: %w", err)
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
		return nil, false, fmt.Errorf("consolestore: audit log: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (AuditEntry, error) {
		var e AuditEntry
		err := r.Scan(&e.ID, &e.At, &e.Actor, &e.Role, &e.OrgID, &e.Org, &e.Action, &e.Target, &e.Detail, &e.ClientAddr)
		e.At = e.At.UTC()
		return e, err
	})
	if err != nil {
		return nil, false, fmt.Errorf("consolestore: audit log: %w", err)
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
