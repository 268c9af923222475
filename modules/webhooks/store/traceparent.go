package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ReadTraceparents makes Claim fill Job.Traceparent from change_events.traceparent, the W3C traceparent of the
// span that wrote the event (recordsd's migration 0104; a writer that is not traced leaves it NULL). Call it
// before the store is used, when deliveries are traced. A backend whose change_events has no such column is
// honoured: the column is then looked for again at most once a minute, and jobs carry no traceparent.
func (s *Store) ReadTraceparents() { s.traceparents = true }

// traceparentRetry is how long a change_events without the traceparent column is believed to stay so.
const traceparentRetry = time.Minute

const eventColumnsTraced = eventColumns + `, traceparent`

// queryEventsForRender reads the events with ids seqs, with their traceparents when asked for and present.
func (s *Store) queryEventsForRender(ctx context.Context, seqs []int64) ([]Event, error) {
	if s.traceparents && time.Now().UnixNano() >= s.noTraceparentUntil.Load() {
		rows, err := s.pool.Query(ctx, `SELECT `+eventColumnsTraced+` FROM change_events WHERE id = ANY($1)`, seqs)
		if err == nil {
			var evs []Event
			if evs, err = scanEventRows(rows, true); err == nil {
				return evs, nil
			}
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42703" { // undefined_column: an older change_events
			return nil, fmt.Errorf("store: render: %w", err)
		}
		s.noTraceparentUntil.Store(time.Now().Add(traceparentRetry).UnixNano())
	}
	rows, err := s.pool.Query(ctx, `SELECT `+eventColumns+` FROM change_events WHERE id = ANY($1)`, seqs)
	if err != nil {
		return nil, fmt.Errorf("store: render: %w", err)
	}
	return scanEventRows(rows, false)
}

// scanEventRows scans eventColumns, and the traceparent after them with traced.
func scanEventRows(rows pgx.Rows, traced bool) ([]Event, error) {
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		dest := []any{&e.Seq, &e.ID, &e.Family, &e.RecordID, &e.Type, &e.ChangedFields, &e.Record, &e.OccurredAt}
		var tp *string
		if traced {
			dest = append(dest, &tp)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("store: scan event: %w", err)
		}
		if tp != nil {
			e.Traceparent = *tp
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read events: %w", err)
	}
	return out, nil
}
