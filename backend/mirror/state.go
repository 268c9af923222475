package mirror

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

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
