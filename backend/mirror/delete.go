package mirror

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/modules/contract"
)

// markDeleted marks every live record of this family+source (and of the source's Scope, if it has one) not
// listed since runStart as deleted, in chunks of 500, one deleted event each.
func (e *Engine) markDeleted(ctx context.Context, src Source, runStart time.Time, opt Options, st *Stats) error {
	ctx, span := startSpan(ctx, opt, SpanSyncMarkDeleted)
	before := st.Deleted
	err := e.markDeletedChunks(ctx, src, runStart, opt, st)
	if span.IsRecording() {
		span.SetAttributes(AttrSyncDeleted.Int(st.Deleted - before))
	}
	endSpan(span, err)
	return err
}

func (e *Engine) markDeletedChunks(ctx context.Context, src Source, runStart time.Time, opt Options, st *Stats) error {
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
	if _, err := tx.Exec(ctx, contract.ChangeEventsWriteLockSQL); err != nil {
		return 0, fmt.Errorf("sync %s: event lock: %w", fam, err)
	}
	scope := ""
	if sc, ok := src.(Scoped); ok {
		scope = sc.Scope()
	}
	rows, err := tx.Query(ctx, `SELECT record_id, content FROM sync_snapshots
		WHERE family = $1 AND source = $2 AND deleted_at IS NULL AND seen_at < $3 AND starts_with(record_id, $4)
		ORDER BY record_id LIMIT 500 FOR UPDATE`, string(fam), src.Name(), runStart, scope)
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
	tp := traceparent(ctx) // nil (NULL) when untraced
	for _, g := range list {
		b.Queue(w.deleteSQL(), g.id, now)
		b.Queue(`UPDATE sync_snapshots SET deleted_at = $3 WHERE family = $1 AND record_id = $2`, string(fam), g.id, now)
		if tp == nil {
			b.Queue(`INSERT INTO change_events (family, record_id, type, changed_fields, record, source, occurred_at)
			VALUES ($1, $2, 'deleted', '{}', $3, $4, $5)`, string(fam), g.id, withSyncedAt(fam, g.content, now), src.Name(), now)
			continue
		}
		b.Queue(`INSERT INTO change_events (family, record_id, type, changed_fields, record, source, occurred_at, traceparent)
			VALUES ($1, $2, 'deleted', '{}', $3, $4, $5, $6)`, string(fam), g.id, withSyncedAt(fam, g.content, now), src.Name(), now, tp)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return 0, fmt.Errorf("sync %s: mark deleted: %w", fam, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("sync %s: commit delete: %w", fam, err)
	}
	return len(list), nil
}
