// Package sync is the mirror-sync engine behind `recordsd sync`: importers (one package per upstream source)
// yield normalized records; the engine upserts them in batch transactions, writes only records whose
// normalized content changed (new last_synced_at) and one change_events row per created/updated/deleted
// record in the same transaction (docs/design.md D14), and persists the resume cursor of --url imports.
package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// EventLockKey is the pg_advisory_xact_lock key every change_events writer holds until commit, so event ids
// commit in id order and a reader polling `id > cursor` never skips a committed event.
const EventLockKey = 7_240_118_100

// EventChannel is NOTIFYed in every transaction that holds EventLockKey, so
// the webhook fan-out (modules/webhooks/store.FeedChannel) hears of new events
// at commit instead of at its next poll. PostgreSQL delivers it only if the
// transaction commits.
const EventChannel = "civicgate_change_events"

// Item is one record read from a source, or the reason it could not be read.
type Item struct {
	Pos string // where it came from: "line 12", "results[3] of page 2"
	Rec Record // nil when Err is set
	Err error
}

// Chunk is what a source yields at a time; the engine commits it as one transaction.
type Chunk struct {
	Items []Item
	// Cursor is the resume point after this chunk ("" for sources that cannot resume, e.g. files).
	Cursor string
}

// Source yields chunks until it returns io.EOF.
type Source interface {
	Family() Family
	Name() string // e.g. "congressgov", "omb"; sync_state and snapshots are kept per family+source
	Next(ctx context.Context) (Chunk, error)
}

// ErrorPolicy says what a malformed record does to the import.
type ErrorPolicy string

// Error policies.
const (
	OnErrorStop ErrorPolicy = "stop" // the chunk holding it is rolled back and the import ends with an error
	OnErrorSkip ErrorPolicy = "skip" // it is reported and skipped
)

// Options configure one run.
type Options struct {
	OnError      ErrorPolicy
	FullSnapshot bool // mark records of this family+source that the run did not list as deleted
	// Resumed says the run continues an interrupted one (the cursor came from sync_state).
	Resumed bool
	// BaseURL is remembered in sync_state with the cursor (a cursor is only reused for the same base).
	BaseURL  string
	Progress func(Stats)                 // called after every chunk; may be nil
	Report   func(pos string, err error) // called for every malformed record; may be nil
	Now      func() time.Time
}

// Stats counts what a run did.
type Stats struct {
	Read, Created, Updated, Unchanged, Deleted, Malformed int
	Chunks                                                int
}

// MalformedError is returned (with OnErrorStop) for the first malformed record.
type MalformedError struct {
	Pos string
	Err error
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("malformed record at %s: %v", e.Pos, e.Err)
}
func (e *MalformedError) Unwrap() error { return e.Err }

// Engine writes imports into the database.
type Engine struct {
	pool *pgxpool.Pool
}

// New returns an engine on pool.
func New(pool *pgxpool.Pool) *Engine { return &Engine{pool: pool} }

// Run imports src to the end. On a malformed record with OnErrorStop, or any database/source error, the
// current chunk is rolled back and the error returned; earlier chunks stay committed and (for resumable
// sources) the cursor points after the last committed chunk.
func (e *Engine) Run(ctx context.Context, src Source, opt Options) (Stats, error) {
	var st Stats
	if opt.OnError == "" {
		opt.OnError = OnErrorStop
	}
	fam := src.Family()
	runStart, mayDelete, err := e.beginRun(ctx, src, opt)
	if err != nil {
		return st, err
	}
	for {
		ch, err := src.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, fmt.Errorf("sync %s: read %s: %w", fam, src.Name(), err)
		}
		var recs []Record
		for _, it := range ch.Items {
			st.Read++
			if it.Err != nil {
				st.Malformed++
				if opt.Report != nil {
					opt.Report(it.Pos, it.Err)
				}
				if opt.OnError == OnErrorStop {
					return st, &MalformedError{Pos: it.Pos, Err: it.Err}
				}
				continue
			}
			recs = append(recs, it.Rec)
		}
		if err := e.writeChunk(ctx, src, recs, ch.Cursor, opt, &st); err != nil {
			return st, err
		}
		st.Chunks++
		if opt.Progress != nil {
			opt.Progress(st)
		}
	}
	if opt.FullSnapshot {
		switch {
		case !mayDelete:
			// The interrupted part of this run did not keep seen_at: records it listed would look vanished.
			if opt.Report != nil {
				opt.Report("end of import", errors.New("full snapshot: resumed a run that was not --full-snapshot, deletion marking not done"))
			}
		case st.Malformed > 0:
			// A skipped record is absent from the import but not gone upstream: deleting it would be wrong.
			if opt.Report != nil {
				opt.Report("end of import", errors.New("full snapshot: malformed records were skipped, deletion marking not done"))
			}
		default:
			if err := e.markDeleted(ctx, src, runStart, opt, &st); err != nil {
				return st, err
			}
		}
	}
	if _, err := e.pool.Exec(ctx, `DELETE FROM sync_state WHERE family = $1 AND source = $2`, string(fam), src.Name()); err != nil {
		return st, fmt.Errorf("sync %s: clear state: %w", fam, err)
	}
	return st, nil
}

// LoadCursor returns the resume cursor an interrupted --url run of family+source against baseURL left
// ("" when there is none).
func (e *Engine) LoadCursor(ctx context.Context, fam Family, source, baseURL string) (string, error) {
	var cur string
	err := e.pool.QueryRow(ctx, `SELECT cursor FROM sync_state WHERE family = $1 AND source = $2 AND base_url = $3`,
		string(fam), source, baseURL).Scan(&cur)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("sync %s: load state: %w", fam, err)
	}
	return cur, nil
}

// beginRun records the run start (kept across resumptions) and returns it, and whether deletion marking is
// allowed: every part of the run (including the interrupted one being resumed) was a full-snapshot run.
func (e *Engine) beginRun(ctx context.Context, src Source, opt Options) (time.Time, bool, error) {
	var start time.Time
	if !opt.Resumed {
		_, err := e.pool.Exec(ctx, `INSERT INTO sync_state (family, source, base_url, cursor, run_started_at, full_snapshot)
			VALUES ($1, $2, $3, '', now(), $4)
			ON CONFLICT (family, source) DO UPDATE SET base_url = EXCLUDED.base_url, cursor = '', run_started_at = now(),
				full_snapshot = EXCLUDED.full_snapshot, updated_at = now()`,
			string(src.Family()), src.Name(), opt.BaseURL, opt.FullSnapshot)
		if err != nil {
			return start, false, fmt.Errorf("sync %s: begin run: %w", src.Family(), err)
		}
	}
	var full bool
	err := e.pool.QueryRow(ctx, `SELECT run_started_at, full_snapshot FROM sync_state WHERE family = $1 AND source = $2`,
		string(src.Family()), src.Name()).Scan(&start, &full)
	if err != nil {
		return start, false, fmt.Errorf("sync %s: run start: %w", src.Family(), err)
	}
	return start, full && opt.FullSnapshot, nil
}

var eventColumns = []string{"family", "record_id", "type", "changed_fields", "record", "source", "occurred_at"}

type stored struct {
	content map[string]any
	deleted bool
}

func (e *Engine) writeChunk(ctx context.Context, src Source, recs []Record, cursor string, opt Options, st *Stats) error {
	fam := src.Family()
	w, err := writerFor(fam)
	if err != nil {
		return err
	}
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("sync %s: begin: %w", fam, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// Single writer for the event feed: taken before any change_events id is drawn, held until commit.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1), pg_notify($2, '')`, int64(EventLockKey), EventChannel); err != nil {
		return fmt.Errorf("sync %s: event lock: %w", fam, err)
	}
	// The last record with an id wins within one chunk (upstream pages can repeat a record).
	byID := make(map[string]Record, len(recs))
	ids := make([]string, 0, len(recs))
	for _, r := range recs {
		id := r.RecordID()
		if _, dup := byID[id]; !dup {
			ids = append(ids, id)
		}
		byID[id] = r
	}
	prev, err := loadSnapshots(ctx, tx, fam, ids)
	if err != nil {
		return err
	}
	existing, err := w.existing(ctx, tx, ids)
	if err != nil {
		return fmt.Errorf("sync %s: existing rows: %w", fam, err)
	}
	now := time.Now().UTC()
	if opt.Now != nil {
		now = opt.Now().UTC()
	}
	b := &pgx.Batch{}
	var events [][]any
	for _, id := range ids {
		r := byID[id]
		content, err := contentOf(r)
		if err != nil {
			return fmt.Errorf("sync %s: record %s: %w", fam, id, err)
		}
		evType := "created"
		var changed []string
		if p, ok := prev[id]; ok && !p.deleted {
			changed = diffFields(p.content, content)
			if len(changed) == 0 && existing[id] {
				st.Unchanged++
				continue
			}
			evType = "updated"
			if len(changed) == 0 { // the row vanished from the table behind our back: rewrite it
				changed = sortedKeys(content)
			}
		} else if ok && p.deleted {
			evType = "created" // reappeared upstream
			changed = sortedKeys(content)
		} else if existing[id] {
			evType = "updated" // a row sync never wrote (e.g. seeded): its previous content is unknown
			changed = sortedKeys(content)
		} else {
			changed = sortedKeys(content)
		}
		if evType == "created" {
			st.Created++
		} else {
			st.Updated++
		}
		if err := w.upsert(b, r, now); err != nil {
			return fmt.Errorf("sync %s: record %s: %w", fam, id, err)
		}
		raw, _ := json.Marshal(content)
		b.Queue(`INSERT INTO sync_snapshots (family, record_id, source, content, deleted_at, seen_at)
			VALUES ($1, $2, $3, $4, NULL, now())
			ON CONFLICT (family, record_id) DO UPDATE SET source = EXCLUDED.source, content = EXCLUDED.content,
				deleted_at = NULL, seen_at = EXCLUDED.seen_at`, string(fam), id, src.Name(), raw)
		events = append(events, []any{string(fam), id, evType, changed, withSyncedAt(fam, content, now), src.Name(), now})
	}
	if opt.FullSnapshot && len(ids) > 0 {
		// seen_at uses the database clock, like run_started_at.
		b.Queue(`UPDATE sync_snapshots SET seen_at = now() WHERE family = $1 AND record_id = ANY($2)`, string(fam), ids)
	}
	if cursor != "" {
		b.Queue(`UPDATE sync_state SET cursor = $3, updated_at = now() WHERE family = $1 AND source = $2`,
			string(fam), src.Name(), cursor)
	}
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("sync %s: write chunk: %w", fam, err)
		}
	}
	if len(events) > 0 {
		// COPY assigns identity ids in row order, still under the event lock.
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"change_events"}, eventColumns, pgx.CopyFromRows(events)); err != nil {
			return fmt.Errorf("sync %s: write events: %w", fam, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("sync %s: commit chunk: %w", fam, err)
	}
	return nil
}

// markDeleted marks every live record of this family+source not listed since runStart as deleted,
// in chunks of 500, one deleted event each.
func (e *Engine) markDeleted(ctx context.Context, src Source, runStart time.Time, opt Options, st *Stats) error {
	fam := src.Family()
	w, err := writerFor(fam)
	if err != nil {
		return err
	}
	for {
		n, err := e.deleteSome(ctx, src, w, runStart, opt)
		if err != nil {
			return err
		}
		st.Deleted += n
		if n == 0 {
			return nil
		}
	}
}

func (e *Engine) deleteSome(ctx context.Context, src Source, w writer, runStart time.Time, opt Options) (int, error) {
	fam := src.Family()
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("sync %s: begin delete: %w", fam, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1), pg_notify($2, '')`, int64(EventLockKey), EventChannel); err != nil {
		return 0, fmt.Errorf("sync %s: event lock: %w", fam, err)
	}
	rows, err := tx.Query(ctx, `SELECT record_id, content FROM sync_snapshots
		WHERE family = $1 AND source = $2 AND deleted_at IS NULL AND seen_at < $3
		ORDER BY record_id LIMIT 500 FOR UPDATE`, string(fam), src.Name(), runStart)
	if err != nil {
		return 0, fmt.Errorf("sync %s: vanished records: %w", fam, err)
	}
	type gone struct {
		id      string
		content map[string]any
	}
	var list []gone
	for rows.Next() {
		var g gone
		if err := rows.Scan(&g.id, &g.content); err != nil {
			rows.Close()
			return 0, fmt.Errorf("sync %s: scan vanished: %w", fam, err)
		}
		list = append(list, g)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("sync %s: vanished records: %w", fam, err)
	}
	if len(list) == 0 {
		return 0, nil
	}
	now := time.Now().UTC()
	if opt.Now != nil {
		now = opt.Now().UTC()
	}
	b := &pgx.Batch{}
	for _, g := range list {
		b.Queue(w.deleteSQL(), g.id, now)
		b.Queue(`UPDATE sync_snapshots SET deleted_at = $3 WHERE family = $1 AND record_id = $2`, string(fam), g.id, now)
		b.Queue(`INSERT INTO change_events (family, record_id, type, changed_fields, record, source, occurred_at)
			VALUES ($1, $2, 'deleted', '{}', $3, $4, $5)`, string(fam), g.id, withSyncedAt(fam, g.content, now), src.Name(), now)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return 0, fmt.Errorf("sync %s: mark deleted: %w", fam, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("sync %s: commit delete: %w", fam, err)
	}
	return len(list), nil
}

func loadSnapshots(ctx context.Context, tx pgx.Tx, fam Family, ids []string) (map[string]stored, error) {
	out := make(map[string]stored, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, `SELECT record_id, content, deleted_at IS NOT NULL FROM sync_snapshots
		WHERE family = $1 AND record_id = ANY($2)`, string(fam), ids)
	if err != nil {
		return nil, fmt.Errorf("sync %s: load snapshots: %w", fam, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var s stored
		if err := rows.Scan(&id, &s.content, &s.deleted); err != nil {
			return nil, fmt.Errorf("sync %s: scan snapshot: %w", fam, err)
		}
		out[id] = s
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sync %s: load snapshots: %w", fam, err)
	}
	return out, nil
}

// contentOf is the record as the API shows it (JSON field names), without the sync timestamp, decoded the
// way jsonb round-trips it so stored and fresh content compare equal.
func contentOf(r Record) (map[string]any, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	delete(m, "last_synced_at")
	delete(m, "lastSyncedAt")
	return m, nil
}

func withSyncedAt(fam Family, content map[string]any, now time.Time) map[string]any {
	out := make(map[string]any, len(content)+1)
	for k, v := range content {
		out[k] = v
	}
	key := "last_synced_at"
	if fam == Bills {
		key = "lastSyncedAt"
	}
	if fam != Members { // Member has no sync timestamp field in the API
		out[key] = now.Format("2006-01-02T15:04:05.000000Z")
	}
	return out
}

// diffFields returns the API field names whose values differ, sorted.
func diffFields(old, cur map[string]any) []string {
	var out []string
	for k, v := range cur {
		if ov, ok := old[k]; !ok || !reflect.DeepEqual(ov, v) {
			out = append(out, k)
		}
	}
	for k := range old {
		if _, ok := cur[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
