package mirror

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

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
