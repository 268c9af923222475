// Package outbox is the console's mail outbox (docs/design.md D74): mails
// are written to civicgate.mail_outbox, in the transaction of the change
// they announce when there is one, and a worker sends them through a Sender
// (SMTP, or in development a folder). A request never waits for a mail
// server: a mail outage only delays mails, which are retried with backoff.
//
// Several gateways share the table: a worker claims one due row with FOR
// UPDATE SKIP LOCKED, sends it, and marks it sent in the same transaction.
// The window of a second send is the time between the server accepting the
// mail and that commit (a crash or a lost database connection there): mail
// is sent at least once, twice only in that window.
package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults of the outbox's bounds.
const (
	// DefaultMaxPending is how many unsent mails the outbox holds before
	// Enqueue refuses (ErrFull): a flood fills a bounded table, not a disk.
	DefaultMaxPending = 10_000
	// MaxAttempts is how many times a mail is tried before it is abandoned
	// (with the backoff below, about two days).
	MaxAttempts = 20
	// firstBackoff doubles after each failure up to maxBackoff.
	firstBackoff = 5 * time.Second
	maxBackoff   = 4 * time.Hour
	// retention is how long a sent or abandoned row (without its body) stays.
	retention = 7 * 24 * time.Hour
	// maxBodyLen bounds each body of one mail.
	maxBodyLen = 64 << 10
)

// ErrFull is returned by Enqueue when the outbox holds its bound of unsent
// mails.
var ErrFull = errors.New("outbox: too many mails waiting")

// Querier is a pool or a transaction.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Enqueue stores m to be sent, in q's transaction when q is one; it refuses
// a message whose headers could be injected (ErrBadHeader) and, with
// maxPending unsent mails already waiting (0: DefaultMaxPending), ErrFull.
func Enqueue(ctx context.Context, q Querier, m Message, maxPending int) error {
	if err := m.check(); err != nil {
		return err
	}
	if len(m.Text) > maxBodyLen || len(m.HTML) > maxBodyLen {
		return fmt.Errorf("outbox: body longer than %d bytes", maxBodyLen)
	}
	maxPending = max(maxPending, 0)
	if maxPending == 0 {
		maxPending = DefaultMaxPending
	}
	var waiting int
	if err := q.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM civicgate.mail_outbox
		WHERE sent_at IS NULL AND abandoned_at IS NULL LIMIT $1) w`, maxPending).Scan(&waiting); err != nil {
		return fmt.Errorf("outbox: count waiting: %w", err)
	}
	if waiting >= maxPending {
		return ErrFull
	}
	if _, err := q.Exec(ctx, `INSERT INTO civicgate.mail_outbox (kind, to_addr, subject, text_body, html_body)
		VALUES ($1, $2, $3, $4, $5)`, m.Kind, m.To, m.Subject, m.Text, m.HTML); err != nil {
		return fmt.Errorf("outbox: enqueue: %w", err)
	}
	return nil
}

// Sender delivers one built message to one recipient.
type Sender interface {
	Send(ctx context.Context, to string, msg []byte) error
}

// SendOne claims one due mail, sends it with send and records the outcome
// in the claiming transaction. It reports whether a mail was due (sent or
// not); a send failure is recorded on the row (retried later) and returned.
func SendOne(ctx context.Context, pool *pgxpool.Pool, send func(ctx context.Context, m Message) error) (bool, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("outbox: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var id int64
	var attempts int
	var m Message
	err = tx.QueryRow(ctx, `SELECT id, kind, to_addr, subject, text_body, html_body, attempts FROM civicgate.mail_outbox
		WHERE sent_at IS NULL AND abandoned_at IS NULL AND next_attempt_at <= now()
		ORDER BY next_attempt_at, id LIMIT 1 FOR UPDATE SKIP LOCKED`).
		Scan(&id, &m.Kind, &m.To, &m.Subject, &m.Text, &m.HTML, &attempts)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("outbox: claim: %w", err)
	}
	sendErr := send(ctx, m)
	if sendErr == nil {
		_, err = tx.Exec(ctx, `UPDATE civicgate.mail_outbox SET sent_at = now(), attempts = attempts + 1,
			text_body = '', html_body = '', last_error = '' WHERE id = $1`, id)
	} else {
		attempts++
		if attempts >= MaxAttempts {
			_, err = tx.Exec(ctx, `UPDATE civicgate.mail_outbox SET abandoned_at = now(), attempts = $2,
				text_body = '', html_body = '', last_error = $3 WHERE id = $1`, id, attempts, clipError(sendErr))
		} else {
			_, err = tx.Exec(ctx, `UPDATE civicgate.mail_outbox SET attempts = $2, last_error = $3,
				next_attempt_at = now() + $4::interval WHERE id = $1`, id, attempts, clipError(sendErr), Backoff(attempts).String())
		}
	}
	if err != nil {
		return true, fmt.Errorf("outbox: record outcome: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return true, fmt.Errorf("outbox: commit: %w", err)
	}
	return true, sendErr
}

// Backoff is the wait after the attempts-th failed attempt.
func Backoff(attempts int) time.Duration {
	d := firstBackoff
	for i := 1; i < attempts && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// clipError is a send error as stored: one line, bounded. Senders never put
// a credential in an error (smtp.go).
func clipError(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 300 {
		s = s[:300]
	}
	return strings.ToValidUTF8(s, "?")
}

// Prune removes rows sent or abandoned more than a week ago, at most limit.
func Prune(ctx context.Context, pool *pgxpool.Pool, limit int) error {
	_, err := pool.Exec(ctx, `DELETE FROM civicgate.mail_outbox WHERE id IN (SELECT id FROM civicgate.mail_outbox
		WHERE coalesce(sent_at, abandoned_at) < now() - $1::interval LIMIT $2)`, retention.String(), limit)
	if err != nil {
		return fmt.Errorf("outbox: prune: %w", err)
	}
	return nil
}

// Stats is what the outbox holds: mails waiting, sent, and abandoned.
type Stats struct {
	Waiting, Sent, Abandoned int
}

// Count returns the outbox's stats.
func Count(ctx context.Context, pool *pgxpool.Pool) (Stats, error) {
	var s Stats
	err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE sent_at IS NULL AND abandoned_at IS NULL),
		count(*) FILTER (WHERE sent_at IS NOT NULL), count(*) FILTER (WHERE abandoned_at IS NOT NULL)
		FROM civicgate.mail_outbox`).Scan(&s.Waiting, &s.Sent, &s.Abandoned)
	if err != nil {
		return s, fmt.Errorf("outbox: count: %w", err)
	}
	return s, nil
}
