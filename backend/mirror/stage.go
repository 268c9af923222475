package mirror

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// stageSpec writes a chunk's changed rows of one table with two statements instead of one per row: COPY into
// a temporary staging table emptied at commit, then one INSERT … SELECT … ON CONFLICT DO UPDATE. It runs in
// the chunk's transaction, under the event lock, so rows, snapshots and events still commit together
// (docs/design.md D14, D30).
type stageSpec struct {
	table, idCol string
	cols         []string // written columns, idCol first; deleted_at is always reset to NULL
	row          func(r Record, now time.Time) ([]any, error)
}

// write copies fresh rows (no row with their id exists, live or deleted) straight into the table and
// upserts the others through the staging table.
func (s *stageSpec) write(ctx context.Context, tx pgx.Tx, fresh, rows [][]any) error {
	if len(fresh) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{s.table}, s.cols, pgx.CopyFromRows(fresh)); err != nil {
			return fmt.Errorf("copy new rows: %w", err)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	stage := "stage_" + s.table
	// Created once per connection, emptied at every commit (and gone with a rollback's rows).
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS `+stage+` (LIKE `+s.table+` INCLUDING DEFAULTS) ON COMMIT DELETE ROWS`); err != nil {
		return fmt.Errorf("staging table: %w", err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{stage}, s.cols, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	set := make([]string, 0, len(s.cols))
	for _, c := range s.cols[1:] {
		set = append(set, c+" = EXCLUDED."+c)
	}
	set = append(set, "deleted_at = NULL")
	list := strings.Join(s.cols, ", ")
	if _, err := tx.Exec(ctx, `INSERT INTO `+s.table+` (`+list+`) SELECT `+list+` FROM `+stage+
		` ON CONFLICT (`+s.idCol+`) DO UPDATE SET `+strings.Join(set, ", ")); err != nil {
		return fmt.Errorf("upsert from staging: %w", err)
	}
	return nil
}

// writeSnapshots stores the chunk's new snapshot contents the same way: fresh ones (no snapshot with their
// id) copied in, the others upserted from staging. seen_at uses the database clock.
func writeSnapshots(ctx context.Context, tx pgx.Tx, fresh, rows [][]any) error {
	if len(fresh) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"sync_snapshots"}, []string{"family", "record_id", "source", "content"},
			pgx.CopyFromRows(fresh)); err != nil {
			return fmt.Errorf("copy new snapshots: %w", err)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS stage_sync_snapshots (family text, record_id text,
		source text, content jsonb) ON COMMIT DELETE ROWS`); err != nil {
		return fmt.Errorf("staging table: %w", err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"stage_sync_snapshots"}, []string{"family", "record_id", "source", "content"},
		pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO sync_snapshots (family, record_id, source, content, deleted_at, seen_at)
		SELECT family, record_id, source, content, NULL, now() FROM stage_sync_snapshots
		ON CONFLICT (family, record_id) DO UPDATE SET source = EXCLUDED.source, content = EXCLUDED.content,
			deleted_at = NULL, seen_at = EXCLUDED.seen_at`); err != nil {
		return fmt.Errorf("upsert from staging: %w", err)
	}
	return nil
}
