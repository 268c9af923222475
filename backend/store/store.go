// Package store runs recordsd's read queries on PostgreSQL: filters (docs/design.md D4) and keyset paging
// (docs/design.md D5). SQL is assembled from constant fragments; every value travels as a placeholder.
package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/civicgate/civicgate/backend/cursor"
	"github.com/civicgate/civicgate/backend/records"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store answers the five families' queries.
type Store struct {
	pool     *pgxpool.Pool // the primary
	replicas *Replicas     // nil: every read on the primary
	cursors  *cursor.Codec
}

// Option configures a Store.
type Option func(*Store)

// WithReplicas routes reads through r (docs/read-replicas.md); r's primary should be the Store's pool.
func WithReplicas(r *Replicas) Option { return func(s *Store) { s.replicas = r } }

// New returns a Store reading through pool (the primary) and signing cursors with cursors.
func New(pool *pgxpool.Pool, cursors *cursor.Codec, opts ...Option) *Store {
	s := &Store{pool: pool, cursors: cursors}
	for _, o := range opts {
		o(s)
	}
	return s
}

// PoolTotalConns is the number of connections the pools hold (idle and in use), replicas' included.
func (s *Store) PoolTotalConns() int32 {
	n := s.pool.Stat().TotalConns()
	if s.replicas != nil {
		n += s.replicas.totalConns()
	}
	return n
}

// ReadStats is the read routing's state and counters; ok is false when no replica is configured.
func (s *Store) ReadStats() (stats ReadStats, ok bool) {
	if s.replicas == nil {
		return ReadStats{}, false
	}
	return s.replicas.Stats(), true
}

// read runs fn — every query of one answer, so that they read one server — on a usable replica or the primary
// (replicas.go). fn may run twice (replica, then primary): it must start its result afresh each time.
func (s *Store) read(ctx context.Context, fn func(db *pgxpool.Pool) error) error {
	if s.replicas == nil {
		return fn(s.pool)
	}
	return s.replicas.read(ctx, fn)
}

// queryPage runs a page query (see read) and collects its rows.
func queryPage[T any](ctx context.Context, s *Store, what, sql string, args []any, limit int, binding string, scan func(pgx.Rows) (T, []string, error)) (records.Page[T], error) {
	var page records.Page[T]
	err := s.read(ctx, func(db *pgxpool.Pool) error {
		rows, err := db.Query(ctx, sql, args...)
		if err != nil {
			return fmt.Errorf("store: %s query: %w", what, err)
		}
		page, err = collect(s, rows, limit, binding, scan)
		return err
	})
	return page, err
}

// Ping reports whether the primary answers (health follows the primary, with or without replicas).
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.pool.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	return nil
}

// query accumulates WHERE conditions and their arguments.
type query struct {
	where []string
	args  []any
	// filtered: the page has a filter, whose values decide its best plan (plans.go).
	filtered bool
}

// params is the query's arguments as pgx takes them: a filtered page's are preceded by the execution mode that
// plans it for its own values (plans.go).
func (q *query) params() []any {
	if !q.filtered {
		return q.args
	}
	return append([]any{filteredExecMode}, q.args...)
}

// arg appends v and returns its placeholder.
func (q *query) arg(v any) string {
	q.args = append(q.args, v)
	return "$" + strconv.Itoa(len(q.args))
}

// cond adds a condition; fragment's %s verbs are filled with placeholders of vals in order.
func (q *query) cond(fragment string, vals ...any) {
	ph := make([]any, len(vals))
	for i, v := range vals {
		ph[i] = q.arg(v)
	}
	q.where = append(q.where, fmt.Sprintf(fragment, ph...))
}

func (q *query) whereSQL() string {
	if len(q.where) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(q.where, " AND ")
}

// likePattern turns user text into a case-insensitive substring pattern with LIKE wildcards escaped.
func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// keyset describes a family's order.
type keyset struct {
	family string
	// cols is the row-comparison column list, e.g. "(b.sort_date, b.id)".
	cols string
	// casts are the SQL types of the cursor keys, in order.
	casts []string
	// op is "<" for descending orders, ">" for ascending.
	op string
}

// page prepares paging: it validates the limit, decodes the cursor (bound to binding) and adds the keyset
// predicate to q.
func (s *Store) page(q *query, ks keyset, binding string, in records.Paging) (int, error) {
	limit, err := records.Limit(in.Limit)
	if err != nil {
		return 0, err
	}
	q.filtered = binding != unfilteredBinding(ks.family)
	if in.Cursor != nil {
		keys, err := s.cursors.Decode(*in.Cursor, binding, len(ks.casts))
		if err != nil {
			return 0, &records.InputError{Field: "cursor", Message: err.Error()}
		}
		ph := make([]string, len(keys))
		for i, k := range keys {
			ph[i] = q.arg(k) + "::" + ks.casts[i]
		}
		q.where = append(q.where, ks.cols+" "+ks.op+" ("+strings.Join(ph, ", ")+")")
	}
	return limit, nil
}

// collect scans up to limit+1 rows with scan (which returns the item and its cursor keys) and builds the page.
func collect[T any](s *Store, rows pgx.Rows, limit int, binding string, scan func(pgx.Rows) (T, []string, error)) (records.Page[T], error) {
	defer rows.Close()
	items := make([]T, 0, limit)
	var lastKeys []string
	more := false
	for rows.Next() {
		if len(items) == limit {
			more = true
			break
		}
		item, keys, err := scan(rows)
		if err != nil {
			return records.Page[T]{}, err
		}
		items = append(items, item)
		lastKeys = keys
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return records.Page[T]{}, fmt.Errorf("store: read rows: %w", err)
	}
	p := records.Page[T]{Items: items}
	if more {
		c := s.cursors.Encode(binding, lastKeys)
		p.NextCursor = &c
	}
	return p, nil
}

// IsInputError reports whether err is a client mistake.
func IsInputError(err error) (*records.InputError, bool) {
	var ie *records.InputError
	ok := errors.As(err, &ie)
	return ie, ok
}

// Timestamp and date renderings (UTC, RFC 3339 / ISO 8601).
const (
	tsFmt   = `'YYYY-MM-DD"T"HH24:MI:SS"Z"'`
	dateFmt = `'YYYY-MM-DD'`
)

func ts(col string) string   { return "to_char(" + col + " AT TIME ZONE 'UTC', " + tsFmt + ")" }
func date(col string) string { return "to_char(" + col + ", " + dateFmt + ")" }

// PoolStat is one pool's statistics: the primary's ("primary") or a replica's ("replica <name>").
type PoolStat struct {
	Name string
	Stat *pgxpool.Stat
}

// PoolStats returns the statistics of every pool the Store reads through, the primary first (none for a Store
// without a pool).
func (s *Store) PoolStats() []PoolStat {
	var out []PoolStat
	if s.pool != nil {
		out = append(out, PoolStat{Name: "primary", Stat: s.pool.Stat()})
	}
	if s.replicas != nil {
		for _, rep := range s.replicas.reps {
			out = append(out, PoolStat{Name: "replica " + rep.Name, Stat: rep.Pool.Stat()})
		}
	}
	return out
}
