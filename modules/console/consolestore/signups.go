package consolestore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Sign-up request statuses (docs/design.md D74).
const (
	SignupPending  = "pending"  // the address is not verified yet
	SignupAwaiting = "awaiting" // verified; an operator decides (approve mode)
	SignupApproved = "approved" // approved; the person's link of the approval mail makes the organization
	SignupRefused  = "refused"
	SignupDone     = "done" // the organization exists
)

// SignupLinkTTL is how long a verification link, and the link of an approval
// mail, is valid.
const SignupLinkTTL = 24 * time.Hour

// SignupSpec is a sign-up form, checked by the caller.
type SignupSpec struct {
	Email, Name, Organization, IntendedUse, TermsURL, ClientAddr string
}

// Signup is a stored sign-up request.
type Signup struct {
	ID           string
	Email        string
	Name         string
	Organization string
	IntendedUse  string
	TermsURL     string
	ClientAddr   string
	Status       string
	OrgID        string
	DecidedBy    string
	CreatedAt    time.Time
}

// ErrSignupRefused is returned for a sign-up link that is unknown, used or
// expired, and for a decision on a request that is not awaiting one: one
// answer for all.
var ErrSignupRefused = errors.New("consolestore: sign-up link refused")

// ErrAddressTaken is returned when the address already owns a sign-up that
// is awaiting, approved or done: an address owns one sign-up organization.
var ErrAddressTaken = errors.New("consolestore: the address already has a sign-up organization")

// CreateSignup stores a pending request and calls mail with its id and
// verification token in the same transaction (the caller enqueues the mail
// there, so a request exists exactly when its mail will be sent).
func CreateSignup(ctx context.Context, pool *pgxpool.Pool, spec SignupSpec, mail func(tx pgx.Tx, id, token string) error) error {
	tok, h, err := newToken()
	if err != nil {
		return err
	}
	id, _, err := newToken()
	if err != nil {
		return err
	}
	id = "su_" + id[:22]
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO civicgate.console_signups
			(id, email, name, organization, intended_use, terms_url, client_addr, status, token_hash, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, now() + $9::interval)`,
			id, strings.ToLower(spec.Email), spec.Name, spec.Organization, spec.IntendedUse, spec.TermsURL,
			spec.ClientAddr, h, SignupLinkTTL.String()); err != nil {
			return fmt.Errorf("consolestore: create sign-up: %w", err)
		}
		return mail(tx, id, tok)
	})
}

const signupColumns = `id, email, name, organization, intended_use, terms_url, client_addr, status,
	coalesce(org_id, ''), decided_by, created_at`

func scanSignup(row pgx.Row) (Signup, error) {
	var s Signup
	err := row.Scan(&s.ID, &s.Email, &s.Name, &s.Organization, &s.IntendedUse, &s.TermsURL, &s.ClientAddr, &s.Status,
		&s.OrgID, &s.DecidedBy, &s.CreatedAt)
	if err != nil {
		return s, err
	}
	s.CreatedAt = s.CreatedAt.UTC()
	return s, nil
}

// ClaimSignupLink uses a sign-up link: a pending request's verification
// link or an approved one's link. In a transaction that holds the request's
// row, it calls next with the request; next returns the new status (and the
// organization made, if any), which is stored with the link used up. Any
// error of next rolls everything back, link included.
func ClaimSignupLink(ctx context.Context, pool *pgxpool.Pool, token string,
	next func(tx pgx.Tx, s Signup) (status, orgID string, err error)) (Signup, error) {
	if token == "" || len(token) > 128 {
		return Signup{}, ErrSignupRefused
	}
	var out Signup
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		s, err := scanSignup(tx.QueryRow(ctx, `SELECT `+signupColumns+` FROM civicgate.console_signups
			WHERE token_hash = $1 AND expires_at > now() AND status IN ('pending','approved') FOR UPDATE`, hashToken(token)))
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrSignupRefused
		}
		if err != nil {
			return fmt.Errorf("consolestore: sign-up link: %w", err)
		}
		// Two links of one address used at once wait for each other here, so
		// the second sees the first's organization (AddressHasSignup) instead
		// of making one the unique index then refuses.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('civicgate.console_signups:' || $1))`, s.Email); err != nil {
			return fmt.Errorf("consolestore: sign-up link: %w", err)
		}
		status, orgID, err := next(tx, s)
		if err != nil {
			return err
		}
		var org *string
		if orgID != "" {
			org = &orgID
		}
		if _, err := tx.Exec(ctx, `UPDATE civicgate.console_signups SET status = $2, org_id = coalesce($3, org_id),
			token_hash = NULL, updated_at = now() WHERE id = $1`, s.ID, status, org); err != nil {
			if uniqueViolation(err) {
				return ErrAddressTaken
			}
			return fmt.Errorf("consolestore: sign-up link: %w", err)
		}
		s.Status, s.OrgID = status, cmp.Or(orgID, s.OrgID)
		out = s
		return nil
	})
	return out, err
}

// AddressHasSignup reports whether email owns a sign-up that is awaiting,
// approved or done (q: the pool or the claiming transaction).
func AddressHasSignup(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, email string) (bool, error) {
	var taken bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM civicgate.console_signups
		WHERE email = $1 AND status IN ('awaiting','approved','done'))`, strings.ToLower(email)).Scan(&taken)
	if err != nil {
		return false, fmt.Errorf("consolestore: sign-up address: %w", err)
	}
	return taken, nil
}

// DecideSignup approves or refuses an awaiting request as decidedBy. An
// approval gives it a new link; mail is called in the same transaction with
// the request and that token ("" for a refusal).
func DecideSignup(ctx context.Context, pool *pgxpool.Pool, id string, approve bool, decidedBy string,
	mail func(tx pgx.Tx, s Signup, token string) error) (Signup, error) {
	var out Signup
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		status, tok, h := SignupRefused, "", []byte(nil)
		if approve {
			var err error
			if tok, h, err = newToken(); err != nil {
				return err
			}
			status = SignupApproved
		}
		s, err := scanSignup(tx.QueryRow(ctx, `UPDATE civicgate.console_signups SET status = $2, token_hash = $3,
			expires_at = now() + $4::interval, decided_by = $5, updated_at = now()
			WHERE id = $1 AND status = 'awaiting' RETURNING `+signupColumns, id, status, h, SignupLinkTTL.String(), decidedBy))
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrSignupRefused
		}
		if err != nil {
			return fmt.Errorf("consolestore: decide sign-up: %w", err)
		}
		out = s
		return mail(tx, s, tok)
	})
	return out, err
}

// ListSignups returns the requests of status (all when ""), newest first, at
// most limit.
func ListSignups(ctx context.Context, pool *pgxpool.Pool, status string, limit int) ([]Signup, error) {
	rows, err := pool.Query(ctx, `SELECT `+signupColumns+` FROM civicgate.console_signups
		WHERE $1 = '' OR status = $1 ORDER BY created_at DESC, id LIMIT $2`, status, limit)
	if err != nil {
		return nil, fmt.Errorf("consolestore: sign-ups: %w", err)
	}
	defer rows.Close()
	var out []Signup
	for rows.Next() {
		s, err := scanSignup(rows)
		if err != nil {
			return nil, fmt.Errorf("consolestore: sign-ups: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("consolestore: sign-ups: %w", err)
	}
	return out, nil
}

// PruneSignups deletes at most limit requests that ended long ago: pending
// ones a day past their link's expiry, refused ones after 30 days (the audit
// log keeps what happened).
func PruneSignups(ctx context.Context, pool *pgxpool.Pool, limit int) error {
	_, err := pool.Exec(ctx, `DELETE FROM civicgate.console_signups WHERE id IN (SELECT id FROM civicgate.console_signups
		WHERE (status = 'pending' AND expires_at < now() - interval '1 day')
		   OR (status = 'refused' AND updated_at < now() - interval '30 days') LIMIT $1)`, limit)
	if err != nil {
		return fmt.Errorf("consolestore: prune sign-ups: %w", err)
	}
	return nil
}

func uniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}
