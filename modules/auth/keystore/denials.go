package keystore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/modules/auth/denyable"
)

// The deny list of access tokens (`civicgate tokens`, docs/operations.md
// "Denying tokens"): an operator denies a token subject or a token id (jti),
// of one issuer or of any, for a while or until undenied. The list lives in
// civicgate.token_denials (migration 5) only: the keys file (file.go) has no
// deny list, so a gateway reading a keys file cannot deny tokens.
//
// Every change runs in one transaction that writes an audit_log row and
// notifies Channel with "deny:sub" or "deny:jti"; a gateway then reloads the
// whole unexpired list (LoadDenials) — it is small — and closes the open
// exchanges of what the new DenySet denies.

// The kinds of denial.
const (
	DenySub = "sub" // every token whose sub claim is Value
	DenyJTI = "jti" // the token whose jti claim is Value
)

// The bounds of a denial, the same as the table's CHECK constraints. A value
// is held to denyable's rule, which the access-token verifier applies too:
// a token whose subject or token id breaks it is refused at admission, so
// every admitted token can be denied (docs/design.md D64).
const (
	MaxDenyValueLen  = denyable.MaxValueLen // bytes of a subject or token id
	MaxDenyIssuerLen = 1024                 // bytes of an issuer
	MaxDenyReasonLen = 1024                 // bytes of a reason
	MaxDenyActorLen  = 256                  // bytes of an actor
)

var (
	// ErrBadDenial is returned for a denial its table would refuse (see
	// Denial.Check); nothing is written.
	ErrBadDenial = errors.New("keystore: bad token denial")
	// ErrNotDenied is returned by UndenyToken when no denial matches.
	ErrNotDenied = errors.New("keystore: no such token denial")
	// ErrNoDenyTable is returned when the database has no token deny table
	// (a key schema older than migration 5).
	ErrNoDenyTable = errors.New("keystore: this database has no token deny list yet; run `civicgate keys migrate`")
)

// Denial is one entry of the deny list.
type Denial struct {
	Kind   string // DenySub or DenyJTI
	Issuer string // the token's iss exactly; "" matches every issuer
	Value  string // the sub or jti, compared exactly (no case folding)
	Reason string
	// ExpiresAt ends the denial; nil: until undenied.
	ExpiresAt *time.Time
	// CreatedAt and Actor are set by DenyToken.
	CreatedAt time.Time
	Actor     string
}

// Expired reports whether d no longer denies anything at t.
func (d Denial) Expired(t time.Time) bool { return d.ExpiresAt != nil && !d.ExpiresAt.After(t) }

// BadDenialError says which field of a denial its table would refuse, and
// why; it matches ErrBadDenial.
type BadDenialError struct {
	Field   string // "kind", "sub" or "jti" (the value), "issuer", "reason", "actor" or "expires_at"
	Problem string // e.g. "is 600 bytes long; at most 512 are allowed"
}

func (e *BadDenialError) Error() string {
	return fmt.Sprintf("%v: the %s %s", ErrBadDenial, e.Field, e.Problem)
}

// Is matches ErrBadDenial.
func (e *BadDenialError) Is(target error) bool { return target == ErrBadDenial }

// Check reports (a *BadDenialError) what the table would refuse in d.
func (d Denial) Check() error {
	if d.Kind != DenySub && d.Kind != DenyJTI {
		return &BadDenialError{Field: "kind", Problem: fmt.Sprintf("%q is not sub or jti", d.Kind)}
	}
	if problem := denyable.ValueProblem(d.Value); problem != "" {
		if d.Value != "" { // an operator trying to deny what the list cannot hold learns that nothing is lost
			problem += "; the gateway admits no token carrying such a " + d.Kind + ", so none needs denying"
		}
		return &BadDenialError{Field: d.Kind, Problem: problem}
	}
	if err := checkText("issuer", d.Issuer, 0, MaxDenyIssuerLen); err != nil {
		return err
	}
	return checkText("reason", d.Reason, 0, MaxDenyReasonLen)
}

// checkText applies the table's bounds to one text column: min..max bytes of
// UTF-8, no control characters (denyable.TextProblem).
func checkText(field, s string, minLen, maxLen int) error {
	if problem := denyable.TextProblem(s, minLen, maxLen); problem != "" {
		return &BadDenialError{Field: field, Problem: problem}
	}
	return nil
}

// DenyOutcome is what DenyToken did: the denial as stored and, when the same
// kind, issuer and value were denied already, the denial it replaced.
type DenyOutcome struct {
	Denial
	Replaced *Denial
}

// DenyToken adds d to the deny list as actor, replacing a denial of the same
// kind, issuer and value (its reason, end and actor). An ExpiresAt not in the
// future is refused.
func DenyToken(ctx context.Context, pool *pgxpool.Pool, d Denial, actor string) (DenyOutcome, error) {
	if err := d.Check(); err != nil {
		return DenyOutcome{}, err
	}
	if err := checkText("actor", actor, 1, MaxDenyActorLen); err != nil {
		return DenyOutcome{}, err
	}
	t := now()
	if d.Expired(t) {
		return DenyOutcome{}, &BadDenialError{Field: "expires_at", Problem: d.ExpiresAt.UTC().Format(time.RFC3339) + " is not in the future"}
	}
	d.CreatedAt, d.Actor = t, actor
	var out DenyOutcome
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		out = DenyOutcome{Denial: d}
		old, err := scanDenials(tx.Query(ctx, `SELECT `+denialColumns+` FROM civicgate.token_denials
			WHERE kind = $1 AND issuer = $2 AND value = $3 FOR UPDATE`, d.Kind, d.Issuer, d.Value))
		if err != nil {
			return err
		}
		if len(old) == 1 {
			out.Replaced = &old[0]
		}
		if _, err := tx.Exec(ctx, `INSERT INTO civicgate.token_denials (kind, issuer, value, reason, created_at, expires_at, actor)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (kind, issuer, value) DO UPDATE SET reason = excluded.reason, created_at = excluded.created_at,
				expires_at = excluded.expires_at, actor = excluded.actor`,
			d.Kind, d.Issuer, d.Value, d.Reason, d.CreatedAt, d.ExpiresAt, d.Actor); err != nil {
			return denyTableError("deny", err)
		}
		detail := denialDetail(d)
		if out.Replaced != nil {
			detail += "; replaces the denial of " + out.Replaced.CreatedAt.UTC().Format(time.RFC3339) + " by " + out.Replaced.Actor
		}
		return auditDenial(ctx, tx, actor, "token.deny", d, detail)
	})
	return out, err
}

// UndenyToken removes the denial of kind, issuer and value (issuer "" is the
// any-issuer denial, not every denial of value) as actor and returns it;
// ErrNotDenied when there is none. An expired denial is removed too.
func UndenyToken(ctx context.Context, pool *pgxpool.Pool, kind, issuer, value, actor string) (Denial, error) {
	if err := (Denial{Kind: kind, Issuer: issuer, Value: value}).Check(); err != nil {
		return Denial{}, err
	}
	if err := checkText("actor", actor, 1, MaxDenyActorLen); err != nil {
		return Denial{}, err
	}
	var out Denial
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		gone, err := scanDenials(tx.Query(ctx, `DELETE FROM civicgate.token_denials
			WHERE kind = $1 AND issuer = $2 AND value = $3 RETURNING `+denialColumns, kind, issuer, value))
		if err != nil {
			return err
		}
		if len(gone) == 0 {
			return ErrNotDenied
		}
		out = gone[0]
		return auditDenial(ctx, tx, actor, "token.undeny", out, denialDetail(out))
	})
	return out, err
}

// auditDenial writes the audit row of a change to the deny list (an
// operator's, of no organization) and notifies the gateways, in tx.
func auditDenial(ctx context.Context, tx pgx.Tx, actor, action string, d Denial, detail string) error {
	if _, err := tx.Exec(ctx, `INSERT INTO civicgate.audit_log (actor, role, action, target, detail)
		VALUES ($1, 'operator', $2, $3, $4)`, actor, action, d.Kind+":"+d.Value, detail); err != nil {
		return fmt.Errorf("keystore: audit the token denial: %w", err)
	}
	return notify(ctx, tx, "deny:"+d.Kind)
}

// denialDetail is the audit detail of d: "issuer=<iss|*> until=<RFC3339|never> reason=<text>".
func denialDetail(d Denial) string {
	iss, until := d.Issuer, "never"
	if iss == "" {
		iss = "*"
	}
	if d.ExpiresAt != nil {
		until = d.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return "issuer=" + iss + " until=" + until + " reason=" + d.Reason
}

// Querier runs a query: a *pgxpool.Pool, *pgx.Conn or pgx.Tx.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// DenialFilter narrows ListDenials.
type DenialFilter struct {
	Kind    string // DenySub, DenyJTI or "" for both
	Expired bool   // list expired denials too
}

// ListDenials returns the denials matching f by kind, value and issuer;
// without f.Expired only those still in force.
func ListDenials(ctx context.Context, q Querier, f DenialFilter) ([]Denial, error) {
	return scanDenials(q.Query(ctx, `SELECT `+denialColumns+` FROM civicgate.token_denials
		WHERE ($1 = '' OR kind = $1) AND ($2 OR expires_at IS NULL OR expires_at > $3)
		ORDER BY kind, value, issuer`, f.Kind, f.Expired, now()))
}

const denialColumns = `kind, issuer, value, reason, created_at, expires_at, actor`

func scanDenials(rows pgx.Rows, err error) ([]Denial, error) {
	if err != nil {
		return nil, denyTableError("read the token denials", err)
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Denial, error) {
		var d Denial
		err := r.Scan(&d.Kind, &d.Issuer, &d.Value, &d.Reason, &d.CreatedAt, &d.ExpiresAt, &d.Actor)
		return d, err
	})
	if err != nil {
		return nil, denyTableError("read the token denials", err)
	}
	return ds, nil
}

// denyTableError names a missing table (ErrNoDenyTable) and wraps the rest.
func denyTableError(what string, err error) error {
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "42P01" { // undefined_table
		return ErrNoDenyTable
	}
	return fmt.Errorf("keystore: %s: %w", what, err)
}

// DenySet is the deny list as a gateway holds it: immutable once loaded, safe
// for concurrent use, a map lookup per kind asked and no allocation. The zero
// DenySet denies nothing.
type DenySet struct {
	subs, jtis map[string][]denyEntry // by value
	next       time.Time              // the earliest end of an entry; zero: none ends
	n          int
	setAside   []SetAsideDenial
}

// SetAsideDenial names a row LoadDenials set aside: its key (kind, issuer,
// value) as printable, bounded text — the row may hold control characters or
// be megabytes long — and what its table's rules refuse in it.
type SetAsideDenial struct {
	Kind, Issuer, Value string // strconv.Quote'd, each cut to 80 bytes
	Problem             string // BadDenialError's text
}

// cut bounds s to max bytes (a problem quotes the refused kind, unbounded in a hand-edited row).
func cut(s string, max int) string {
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// namedForLog quotes s for a log line, cut to 80 bytes before quoting.
func namedForLog(s string) string {
	const max = 80
	if len(s) > max {
		return strconv.Quote(s[:max]) + "…"
	}
	return strconv.Quote(s)
}

// denyEntry is one denial of a value: of issuer ("" any), until expires
// (zero: never).
type denyEntry struct {
	issuer  string
	expires time.Time
}

// LoadDenials reads the denials in force at now. A row the table's
// constraints would refuse (a hand edit with them dropped) is set aside and
// named (DenySet.SetAside), never failing the load: the rest still deny.
func LoadDenials(ctx context.Context, q Querier, now time.Time) (DenySet, error) {
	rows, err := q.Query(ctx, `SELECT kind, issuer, value, expires_at FROM civicgate.token_denials
		WHERE expires_at IS NULL OR expires_at > $1`, now)
	if err != nil {
		return DenySet{}, denyTableError("load the token denials", err)
	}
	defer rows.Close()
	var s DenySet
	for rows.Next() {
		var d Denial
		if err := rows.Scan(&d.Kind, &d.Issuer, &d.Value, &d.ExpiresAt); err != nil {
			return DenySet{}, denyTableError("load the token denials", err)
		}
		if err := d.Check(); err != nil {
			s.setAside = append(s.setAside, SetAsideDenial{Kind: namedForLog(d.Kind), Issuer: namedForLog(d.Issuer),
				Value: namedForLog(d.Value), Problem: cut(err.Error(), 200)})
			continue
		}
		s.add(d)
	}
	if err := rows.Err(); err != nil {
		return DenySet{}, denyTableError("load the token denials", err)
	}
	return s, nil
}

func (s *DenySet) add(d Denial) {
	m := &s.subs
	if d.Kind == DenyJTI {
		m = &s.jtis
	}
	if *m == nil {
		*m = make(map[string][]denyEntry)
	}
	e := denyEntry{issuer: d.Issuer}
	if d.ExpiresAt != nil {
		e.expires = *d.ExpiresAt
		if s.next.IsZero() || e.expires.Before(s.next) {
			s.next = e.expires
		}
	}
	(*m)[d.Value] = append((*m)[d.Value], e)
	s.n++
}

// Denied reports whether a token of issuer with subject sub and token id jti
// (either "" when the token has none) is denied now, and by which kind
// (DenySub is checked first). An entry matches its issuer exactly, or any
// issuer when its issuer is empty; an entry past its end matches nothing.
func (s DenySet) Denied(issuer, sub, jti string) (kind string, ok bool) {
	return s.denied(issuer, sub, jti, time.Time{}, true)
}

// DeniedAt is Denied at time t instead of now.
func (s DenySet) DeniedAt(issuer, sub, jti string, t time.Time) (kind string, ok bool) {
	return s.denied(issuer, sub, jti, t, false)
}

// denied checks at t or, with clock, at the clock's time, read only when an
// entry with an end matches.
func (s DenySet) denied(issuer, sub, jti string, t time.Time, clock bool) (string, bool) {
	if sub != "" && len(s.subs) != 0 && matches(s.subs[sub], issuer, t, clock) {
		return DenySub, true
	}
	if jti != "" && len(s.jtis) != 0 && matches(s.jtis[jti], issuer, t, clock) {
		return DenyJTI, true
	}
	return "", false
}

func matches(es []denyEntry, issuer string, t time.Time, clock bool) bool {
	for _, e := range es {
		if e.issuer != "" && e.issuer != issuer {
			continue
		}
		if e.expires.IsZero() {
			return true
		}
		if clock {
			t, clock = time.Now(), false
		}
		if e.expires.After(t) {
			return true
		}
	}
	return false
}

// NextExpiry is the earliest end of a loaded denial (zero: none ends): the
// gateway reloads then, so the set stays small and NextExpiry moves on.
func (s DenySet) NextExpiry() time.Time { return s.next }

// Len is how many denials the set holds.
func (s DenySet) Len() int { return s.n }

// Skipped is how many rows LoadDenials set aside as invalid.
func (s DenySet) Skipped() int { return len(s.setAside) }

// SetAside names the rows LoadDenials set aside, in the order read.
func (s DenySet) SetAside() []SetAsideDenial { return s.setAside }
