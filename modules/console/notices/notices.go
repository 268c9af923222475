// Package notices mails an organization's admins, once, about what they
// should act on (docs/design.md D82): a key that expires within 7 days, a
// deprecated schema field their operations read. Each kind is a Source; a
// Runner asks every source what is due, keeps what was not mailed yet, and in
// one transaction records the notice in civicgate.mail_notices and enqueues
// one mail per admin in the outbox (modules/console/outbox), whose worker
// sends them. It imports no Caddy: the civic_mail app (modules/console/mailapp)
// runs it.
package notices

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/console/consolestore"
	"github.com/civicgate/civicgate/modules/console/outbox"
)

// Notice is one fact about an organization, mailed once to its admins.
type Notice struct {
	Org string // the organization's id
	// Subject is what the notice is about within its source's kind: it is
	// mailed once per (kind, Org, Subject). At most 200 bytes.
	Subject string
	Mail    Content
	// Rows are the source's own rows the notice tells of, which a Recorder
	// marks in the transaction that mails it (the quota crossings' ids).
	Rows []int64
}

// Content is a notice mail's words. Every string is plain text (names from
// the database, schema reasons): Render escapes it in the HTML part and
// keeps it out of headers but the subject, where control characters become
// spaces.
type Content struct {
	Title string   // the mail's subject line
	Paras []string // paragraphs
	Items []string // a bounded list after the paragraphs (operations)
	More  string   // a last line after the list ("and 3 more operations")
	Link  string   // a console page, or ""
}

// Source is one kind of notice. Due returns every notice of the kind that
// holds at now, mailed or not (the Runner keeps the new ones); it reads
// through its owner's queries, never a copy of them. A source that records
// on its own rows what was mailed also implements Recorder.
type Source interface {
	Kind() string // the outbox's kind and the notices' namespace: [a-z_]{1,32}
	Due(ctx context.Context, pool *pgxpool.Pool, now time.Time) ([]Notice, error)
}

// Recorder is a Source that marks its own rows as mailed: Mailed runs in the
// transaction that records n and enqueues its mails, so both commit or
// neither does.
type Recorder interface {
	Mailed(ctx context.Context, tx pgx.Tx, n Notice) error
}

// Runner mails the sources' new notices.
type Runner struct {
	Pool    *pgxpool.Pool
	Sources []Source
	// MaxPending is the outbox's bound (0: outbox.DefaultMaxPending). A full
	// outbox ends the round: the notice is neither recorded nor mailed, and
	// the next round tries again.
	MaxPending int
	Now        func() time.Time
	Logger     *zap.Logger
	// Enqueued, when set, is called after a round that enqueued mail (the
	// worker's Wake).
	Enqueued func()

	pruned time.Time // when prune last ran (Once is called by one loop)
}

// Run mails new notices at once and then every interval until ctx ends.
func (r *Runner) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var warned time.Time
	for {
		if _, err := r.Once(ctx); err != nil && ctx.Err() == nil && time.Since(warned) > time.Minute {
			warned = time.Now() // a database away fails every round: logged once a minute
			r.Logger.Warn("notices: a round failed; trying again", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Once runs one round of every source and returns the mails it enqueued.
// Another gateway may run the same round at once: the notices' primary key
// lets one of them record and mail each notice.
func (r *Runner) Once(ctx context.Context) (int, error) {
	now := r.Now()
	total := 0
	var errs []error
	for _, src := range r.Sources {
		n, err := r.source(ctx, src, now)
		total += n
		if err != nil {
			errs = append(errs, fmt.Errorf("notices: %s: %w", src.Kind(), err))
			if errors.Is(err, outbox.ErrFull) {
				break // no other source can enqueue either
			}
		}
	}
	if total > 0 && r.Enqueued != nil {
		r.Enqueued()
	}
	if n, err := r.prune(ctx, now); err != nil {
		errs = append(errs, err)
	} else if n > 0 {
		r.Logger.Info("notices: forgot old notices", zap.Int64("rows", n))
	}
	return total, errors.Join(errs...)
}

func (r *Runner) source(ctx context.Context, src Source, now time.Time) (int, error) {
	due, err := src.Due(ctx, r.Pool, now)
	if err != nil || len(due) == 0 {
		return 0, err
	}
	todo, err := unmailed(ctx, r.Pool, src.Kind(), due)
	if err != nil {
		return 0, err
	}
	sent := 0
	for _, n := range todo {
		k, err := r.mail(ctx, src, n)
		sent += k
		if err != nil {
			return sent, err
		}
	}
	return sent, nil
}

// unmailed keeps the notices of due not recorded yet (one query).
func unmailed(ctx context.Context, pool *pgxpool.Pool, kind string, due []Notice) ([]Notice, error) {
	orgs, subjects := make([]string, len(due)), make([]string, len(due))
	for i, n := range due {
		orgs[i], subjects[i] = n.Org, n.Subject
	}
	rows, err := pool.Query(ctx, `SELECT n.org_id, n.subject FROM unnest($2::text[], $3::text[]) AS p(org_id, subject)
		JOIN civicgate.mail_notices n ON n.kind = $1 AND n.org_id = p.org_id AND n.subject = p.subject`, kind, orgs, subjects)
	if err != nil {
		return nil, fmt.Errorf("mailed notices: %w", err)
	}
	done := map[[2]string]bool{}
	for rows.Next() {
		var k [2]string
		if err := rows.Scan(&k[0], &k[1]); err != nil {
			return nil, fmt.Errorf("mailed notices: %w", err)
		}
		done[k] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("mailed notices: %w", err)
	}
	var out []Notice
	for _, n := range due {
		if !done[[2]string{n.Org, n.Subject}] {
			out = append(out, n)
		}
	}
	return out, nil
}

// mail records n and enqueues one mail per admin, in one transaction, and
// returns the mails enqueued. An organization without a known admin gets
// nothing recorded, so it is told once it has one; an admin address the
// outbox refuses is skipped (it cannot be mailed, and the others must be).
func (r *Runner) mail(ctx context.Context, src Source, n Notice) (int, error) {
	admins, err := consolestore.OrgAdmins(ctx, r.Pool, n.Org)
	if err != nil || len(admins) == 0 {
		return 0, err
	}
	msg := Render(src.Kind(), n.Mail)
	sent := 0
	err = pgx.BeginFunc(ctx, r.Pool, func(tx pgx.Tx) error {
		sent = 0
		tag, err := tx.Exec(ctx, `INSERT INTO civicgate.mail_notices (kind, org_id, subject, recipients) VALUES ($1, $2, $3, 0)
			ON CONFLICT DO NOTHING`, src.Kind(), n.Org, n.Subject)
		if err != nil {
			return fmt.Errorf("record: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return nil // another gateway mailed it since unmailed looked
		}
		for _, to := range admins {
			msg.To = to
			err := outbox.Enqueue(ctx, tx, msg, r.MaxPending)
			if errors.Is(err, outbox.ErrBadHeader) {
				r.Logger.Warn("notices: an admin address cannot be mailed; skipped", zap.String("kind", src.Kind()),
					zap.String("org", n.Org))
				continue
			}
			if err != nil {
				return err
			}
			sent++
		}
		if rec, ok := src.(Recorder); ok {
			if err := rec.Mailed(ctx, tx, n); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `UPDATE civicgate.mail_notices SET recipients = $4 WHERE kind = $1 AND org_id = $2 AND subject = $3`,
			src.Kind(), n.Org, n.Subject, sent)
		return err
	})
	if err != nil {
		return 0, err
	}
	return sent, nil
}

var mailHTML = template.Must(template.New("notice").Parse(`<!doctype html><html><body>
{{range .Paras}}<p>{{.}}</p>
{{end}}{{with .Items}}<ul>
{{range .}}<li>{{.}}</li>
{{end}}</ul>
{{end}}{{with .More}}<p>{{.}}</p>
{{end}}{{with .Link}}<p><a href="{{.}}">{{.}}</a></p>
{{end}}</body></html>`))

// Render is c as an outbox message of kind (its recipient left to fill):
// plain text and the same words as HTML, every value escaped there; the
// subject's control characters become spaces (it is a header).
func Render(kind string, c Content) outbox.Message {
	var text strings.Builder
	for _, p := range c.Paras {
		text.WriteString(p + "\n\n")
	}
	for _, it := range c.Items {
		text.WriteString("- " + it + "\n")
	}
	if len(c.Items) > 0 {
		text.WriteString("\n")
	}
	if c.More != "" {
		text.WriteString(c.More + "\n\n")
	}
	if c.Link != "" {
		text.WriteString(c.Link + "\n")
	}
	var html strings.Builder
	_ = mailHTML.Execute(&html, c) // a template of strings cannot fail
	title := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, c.Title)
	if len(title) > 200 {
		title = strings.ToValidUTF8(title[:197], "") + "..."
	}
	return outbox.Message{Kind: kind, Subject: title, Text: strings.TrimRight(text.String(), "\n") + "\n", HTML: html.String()}
}
