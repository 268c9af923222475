package consolestore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Session is a signed-in member, as the console sees each request.
type Session struct {
	Identity
	Via       string // "link" or "oidc"
	CreatedAt time.Time
	ExpiresAt time.Time // the absolute end, whatever the activity
}

// Timeouts bound a session: it ends Idle after its last request and Lifetime
// after sign-in, whichever comes first.
type Timeouts struct {
	Idle     time.Duration
	Lifetime time.Duration
}

// NewSession starts a session for id and returns its token (the cookie
// value; only its hash is stored).
func NewSession(ctx context.Context, pool *pgxpool.Pool, id Identity, via, clientAddr string, t Timeouts) (string, error) {
	tok, h, err := newToken()
	if err != nil {
		return "", err
	}
	var org *string
	if id.OrgID != "" {
		org = &id.OrgID
	}
	_, err = pool.Exec(ctx, `INSERT INTO civicgate.console_sessions (id_hash, email, org_id, role, via, client_addr, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, now() + $7::interval)`, h, id.Email, org, id.Role, via, clientAddr, t.Lifetime.String())
	if err != nil {
		return "", fmt.Errorf("consolestore: new session: %w", err)
	}
	return tok, nil
}

// ErrNoSession is returned for a token with no live session: unknown,
// signed out, idle too long, past its lifetime, or of a deleted
// organization.
var ErrNoSession = errors.New("consolestore: no session")

// Touch returns the live session of token and records the request (the idle
// clock restarts, to the minute), in one statement.
func Touch(ctx context.Context, pool *pgxpool.Pool, token string, idle time.Duration) (Session, error) {
	if token == "" || len(token) > 128 {
		return Session{}, ErrNoSession
	}
	var s Session
	var org *string
	// The idle clock is written at most once a minute per session: a request
	// that finds it fresh writes nothing, so it commits no WAL (a page view
	// does not wait for a disk flush). Idle timeouts are exact to a minute.
	err := pool.QueryRow(ctx, `WITH live AS (
			SELECT cs.id_hash, cs.email, cs.org_id, cs.role, cs.via, cs.created_at, cs.expires_at, cs.last_seen_at
			FROM civicgate.console_sessions cs
			WHERE cs.id_hash = $1 AND cs.ended_at IS NULL AND cs.expires_at > now() AND cs.last_seen_at > now() - $2::interval
			  AND (cs.org_id IS NULL OR EXISTS (SELECT 1 FROM civicgate.organizations o WHERE o.id = cs.org_id AND o.status <> 'deleted'))),
		touched AS (
			UPDATE civicgate.console_sessions SET last_seen_at = now()
			WHERE id_hash IN (SELECT id_hash FROM live WHERE last_seen_at < now() - interval '1 minute'))
		SELECT email, org_id, role, via, created_at, expires_at FROM live`, hashToken(token), idle.String()).
		Scan(&s.Email, &org, &s.Role, &s.Via, &s.CreatedAt, &s.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, ErrNoSession
	}
	if err != nil {
		return Session{}, fmt.Errorf("consolestore: session: %w", err)
	}
	if org != nil {
		s.OrgID = *org
	}
	return s, nil
}

// End ends the session of token (sign out).
func End(ctx context.Context, pool *pgxpool.Pool, token string) error {
	if _, err := pool.Exec(ctx, `UPDATE civicgate.console_sessions SET ended_at = now() WHERE id_hash = $1 AND ended_at IS NULL`,
		hashToken(token)); err != nil {
		return fmt.Errorf("consolestore: end session: %w", err)
	}
	return nil
}

// EndAll ends every session of email (sign out everywhere) and returns how
// many there were.
func EndAll(ctx context.Context, pool *pgxpool.Pool, email string) (int64, error) {
	tag, err := pool.Exec(ctx, `UPDATE civicgate.console_sessions SET ended_at = now() WHERE email = $1 AND ended_at IS NULL`, email)
	if err != nil {
		return 0, fmt.Errorf("consolestore: end sessions: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Prune deletes sessions, links and OIDC flows that can no longer be used
// (ended or expired more than a day ago), at most limit rows of each.
func Prune(ctx context.Context, pool *pgxpool.Pool, limit int) error {
	for _, q := range []string{
		`DELETE FROM civicgate.console_sessions WHERE id_hash IN (SELECT id_hash FROM civicgate.console_sessions
			WHERE coalesce(ended_at, expires_at) < now() - interval '1 day' LIMIT $1)`,
		`DELETE FROM civicgate.console_links WHERE token_hash IN (SELECT token_hash FROM civicgate.console_links
			WHERE expires_at < now() - interval '1 day' LIMIT $1)`,
		`DELETE FROM civicgate.console_oidc_flows WHERE state_hash IN (SELECT state_hash FROM civicgate.console_oidc_flows
			WHERE created_at < now() - interval '1 hour' LIMIT $1)`,
	} {
		if _, err := pool.Exec(ctx, q, limit); err != nil {
			return fmt.Errorf("consolestore: prune: %w", err)
		}
	}
	return nil
}

// OIDCFlowTTL bounds the time between starting an OIDC sign-in and its callback.
const OIDCFlowTTL = 10 * time.Minute

// SaveOIDCFlow remembers an OIDC sign-in in flight: its state (hashed), PKCE
// verifier and nonce.
func SaveOIDCFlow(ctx context.Context, pool *pgxpool.Pool, state, verifier, nonce string) error {
	if _, err := pool.Exec(ctx, `INSERT INTO civicgate.console_oidc_flows (state_hash, verifier, nonce) VALUES ($1, $2, $3)`,
		hashToken(state), verifier, nonce); err != nil {
		return fmt.Errorf("consolestore: save OIDC flow: %w", err)
	}
	return nil
}

// TakeOIDCFlow returns and deletes the flow of state (single use);
// ErrNotFound when there is none younger than OIDCFlowTTL.
func TakeOIDCFlow(ctx context.Context, pool *pgxpool.Pool, state string) (verifier, nonce string, err error) {
	if state == "" || len(state) > 128 {
		return "", "", ErrNotFound
	}
	err = pool.QueryRow(ctx, `DELETE FROM civicgate.console_oidc_flows WHERE state_hash = $1 AND created_at > now() - $2::interval
		RETURNING verifier, nonce`, hashToken(state), OIDCFlowTTL.String()).Scan(&verifier, &nonce)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", ErrNotFound
	}
	if err != nil {
		return "", "", fmt.Errorf("consolestore: take OIDC flow: %w", err)
	}
	return verifier, nonce, nil
}
