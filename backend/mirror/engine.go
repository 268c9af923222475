// Package mirror is the mirror-sync engine behind `recordsd sync`: importers (one package per upstream source)
// yield normalized records; the engine upserts them in batch transactions, writes only records whose
// normalized content changed (new last_synced_at) and one change_events row per created/updated/deleted
// record in the same transaction (docs/design.md D14), and persists the resume cursor of --url imports.
package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"
)

// Item is one record read from a source, or the reason it could not be read, or only a note.
type Item struct {
	Pos string // where it came from: "line 12", "results[3] of page 2"
	Rec Record // nil when Err is set
	Err error
	// Note says something about the record that a user must be able to see (e.g. "officialTitle: no titles
	// file, bill.title used"), under NoteKind, the name the summary counts it by (e.g. "title_fallback").
	// An item with a note but neither Rec nor Err is not a record (e.g. a skipped file): it is reported and
	// counted under its kind, not read.
	Note, NoteKind string
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
	// Notice is called for every item's note (see Item.Note); may be nil.
	Notice func(pos, kind, note string)
	Now    func() time.Time
	// TracerProvider, when it records (internal/telemetry.Setup with tracing on), traces the run: a sync.run
	// span, a sync.chunk span per chunk and the chunk span's traceparent on every change event it writes
	// (change_events.traceparent, migration 0104). Nil: no tracing.
	TracerProvider trace.TracerProvider
}

// Stats counts what a run did. Every record read has exactly one outcome:
// Read = Created + Updated + Unchanged + Duplicate + Malformed. Duplicate counts a record whose id an earlier
// record of the same chunk already had (the later one is written: upstream pages can repeat a record).
type Stats struct {
	Read, Created, Updated, Unchanged, Duplicate, Deleted, Malformed int
	Chunks                                                           int
	// Notes counts the items' notes by kind (e.g. "title_fallback", "skipped_file").
	Notes map[string]int
}

// Scoped is implemented by sources whose import covers only part of a family+source: --full-snapshot then
// marks deleted only records whose id starts with Scope() (an OMB edition covers only its own lines).
type Scoped interface {
	Scope() string
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
	ctx, span := startSpan(ctx, opt, SpanSyncRun, AttrSyncFamily.String(string(src.Family())),
		AttrSyncSource.String(src.Name()), AttrSyncFullSnapshot.Bool(opt.FullSnapshot), AttrSyncResumed.Bool(opt.Resumed))
	st, err := e.run(ctx, src, opt)
	if span.IsRecording() {
		span.SetAttributes(runAttrs(st)...)
	}
	endSpan(span, err)
	return st, err
}

func (e *Engine) run(ctx context.Context, src Source, opt Options) (Stats, error) {
	var st Stats
	if opt.OnError == "" {
		opt.OnError = OnErrorStop
	}
	fam := src.Family()
	runStart, mayDelete, err := e.beginRun(ctx, src, opt)
	if err != nil {
		return st, err
	}
	chunks, stop := readAhead(ctx, src)
	defer stop()
	for {
		pc, ok := <-chunks
		if !ok { // only when ctx ended
			return st, fmt.Errorf("sync %s: read %s: %w", fam, src.Name(), ctx.Err())
		}
		if errors.Is(pc.err, io.EOF) {
			break
		}
		if pc.err != nil {
			return st, pc.err
		}
		for _, it := range pc.chunk.Items {
			if it.Note != "" {
				if st.Notes == nil {
					st.Notes = map[string]int{}
				}
				st.Notes[it.NoteKind]++
				if opt.Notice != nil {
					opt.Notice(it.Pos, it.NoteKind, it.Note)
				}
			}
			if it.Rec == nil && it.Err == nil {
				continue // a note only
			}
			st.Read++
			if it.Err != nil {
				st.Malformed++
				if opt.Report != nil {
					opt.Report(it.Pos, it.Err)
				}
				if opt.OnError == OnErrorStop {
					return st, &MalformedError{Pos: it.Pos, Err: it.Err}
				}
			}
		}
		if err := e.writeChunk(ctx, src, pc, opt, &st); err != nil {
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
