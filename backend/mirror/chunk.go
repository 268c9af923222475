package mirror

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/modules/contract"
)

// writeChunk writes one prepared chunk in one transaction: rows, snapshots, events and the cursor commit
// together, under the event lock (docs/design.md D14).
func (e *Engine) writeChunk(ctx context.Context, src Source, pc preparedChunk, opt Options, st *Stats) error {
	ctx, span := startSpan(ctx, opt, SpanSyncChunk, AttrSyncRecords.Int(len(pc.recs)))
	events := 0
	err := e.writeChunkTx(ctx, src, pc, opt, st, &events)
	if span.IsRecording() {
		span.SetAttributes(AttrSyncEvents.Int(events))
	}
	endSpan(span, err)
	return err
}

func (e *Engine) writeChunkTx(ctx context.Context, src Source, pc preparedChunk, opt Options, st *Stats, nEvents *int) error {
	fam := src.Family()
	cursor := pc.chunk.Cursor
	st.Duplicate += pc.duplicates
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
	if _, err := tx.Exec(ctx, contract.ChangeEventsWriteLockSQL); err != nil {
		return fmt.Errorf("sync %s: event lock: %w", fam, err)
	}
	ids := make([]string, len(pc.recs))
	for i, p := range pc.recs {
		ids[i] = p.id
	}
	k, err := lookup(ctx, tx, fam, w, ids)
	if err != nil {
		return err
	}
	prev, existing, present := k.prev, k.live, k.present
	now := time.Now().UTC()
	if opt.Now != nil {
		now = opt.Now().UTC()
	}
	b := &pgx.Batch{}
	// New rows (no row and no snapshot with their id) are copied straight into their tables; the others go
	// through the staging upserts.
	var events, staged, fresh, snaps, freshSnaps [][]any
	synced := syncedAtJSON(fam, now)
	for _, p := range pc.recs {
		id, r, content := p.id, p.rec, p.content
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
		if w.stage != nil {
			row, err := w.stage.row(r, now)
			if err != nil {
				return fmt.Errorf("sync %s: record %s: %w", fam, id, err)
			}
			if _, seen := prev[id]; !seen && !present[id] {
				fresh = append(fresh, row)
			} else {
				staged = append(staged, row)
			}
		} else if err := w.upsert(b, r, now); err != nil {
			return fmt.Errorf("sync %s: record %s: %w", fam, id, err)
		}
		if _, seen := prev[id]; seen {
			snaps = append(snaps, []any{string(fam), id, src.Name(), p.raw})
		} else {
			freshSnaps = append(freshSnaps, []any{string(fam), id, src.Name(), p.raw})
		}
		events = append(events, []any{string(fam), id, evType, changed, withSyncedAtJSON(p.raw, synced), src.Name(), now})
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
	if len(staged)+len(fresh) > 0 {
		if err := w.stage.write(ctx, tx, fresh, staged); err != nil {
			return fmt.Errorf("sync %s: write rows: %w", fam, err)
		}
	}
	if err := writeSnapshots(ctx, tx, freshSnaps, snaps); err != nil {
		return fmt.Errorf("sync %s: write snapshots: %w", fam, err)
	}
	if len(events) > 0 {
		*nEvents = len(events)
		cols := eventColumns
		if tp := traceparent(ctx); tp != nil {
			cols = eventColumnsTraced
			for i := range events {
				events[i] = append(events[i], tp)
			}
		}
		// COPY assigns identity ids in row order, still under the event lock.
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"change_events"}, cols, pgx.CopyFromRows(events)); err != nil {
			return fmt.Errorf("sync %s: write events: %w", fam, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("sync %s: commit chunk: %w", fam, err)
	}
	return nil
}
