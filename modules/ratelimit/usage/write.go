package usage

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Retention of the two tables (Prune).
const (
	MinuteRetention = 48 * time.Hour
	HourRetention   = 90 * 24 * time.Hour
)

// batchRows is the most rows one upsert statement carries.
const batchRows = 5000

// ErrNotMigrated is returned (wrapped) when the usage tables do not exist.
var ErrNotMigrated = errors.New("usage: the usage tables do not exist (run `civicgate keys migrate`)")

// upsertSQL adds a batch of rows to the table %s (a constant of this file):
// one statement per batch, the columns as arrays, in the order given so that
// concurrent writers lock rows in the same order (no deadlock).
const upsertSQL = `INSERT INTO %s AS u (key_id, org_id, start, admitted, refused, client_errors, server_errors, cost, mcp_calls)
SELECT k, o, s, a, r, ce, se, c, m
FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[])
	WITH ORDINALITY AS t(k, o, s, a, r, ce, se, c, m, n)
ORDER BY n
ON CONFLICT (key_id, start) DO UPDATE SET
	admitted      = u.admitted + EXCLUDED.admitted,
	refused       = u.refused + EXCLUDED.refused,
	client_errors = u.client_errors + EXCLUDED.client_errors,
	server_errors = u.server_errors + EXCLUDED.server_errors,
	cost          = u.cost + EXCLUDED.cost,
	mcp_calls     = u.mcp_calls + EXCLUDED.mcp_calls`

const (
	minuteTable = "civicgate.usage_minute"
	hourTable   = "civicgate.usage_hour"
)

// Write writes rows as a batch of its own (WriteBatch with a fresh id).
func Write(ctx context.Context, pool *pgxpool.Pool, rows []Row) error {
	_, err := WriteBatch(ctx, pool, NewBatchID(), rows)
	return err
}

// NewBatchID is a random batch id for WriteBatch.
func NewBatchID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}

// WriteBatch adds rows to civicgate.usage_minute (each row's minute) and to
// civicgate.usage_hour (its hour) in one transaction that also records id in
// civicgate.usage_flushes: either both tables get all the rows or neither
// gets any, and a batch id already recorded adds nothing (applied false).
// So a writer that did not hear whether its commit landed retries the same
// rows under the same id and they count once. Counts add to what is there,
// so several gateways may write the same (key, minute). Rows of the same key
// and bucket are summed first.
func WriteBatch(ctx context.Context, pool *pgxpool.Pool, id string, rows []Row) (applied bool, err error) {
	return WriteFlush(ctx, pool, id, Batch{Rows: rows})
}

// Batch is what one flush writes: the minute counts, the operation hours
// and the operation records (docs/design.md D70).
type Batch struct {
	Rows       []Row
	Operations []OperationRow
	Records    []OperationRecord
	// Crossings are the quota thresholds reached (docs/design.md D81),
	// each written once per window.
	Crossings []Crossing
}

func (b *Batch) empty() bool {
	return len(b.Rows) == 0 && len(b.Operations) == 0 && len(b.Records) == 0 && len(b.Crossings) == 0
}

// WriteFlush is WriteBatch for a whole Batch: the minute and hour rows, the
// operation hours (civicgate.usage_operation_hour, added to as the hour rows
// are) and the operation records (civicgate.operations and its coordinates,
// written once per hash), all in one transaction under the batch id.
func WriteFlush(ctx context.Context, pool *pgxpool.Pool, id string, b Batch) (applied bool, err error) {
	if b.empty() {
		return false, nil
	}
	rows := b.Rows
	minutes := rollup(rows, time.Minute)
	hours := rollup(rows, time.Hour)
	ops := rollupOperations(b.Operations)
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO civicgate.usage_flushes (id) VALUES ($1) ON CONFLICT (id) DO NOTHING`, id)
		if err != nil {
			return fmt.Errorf("record the batch: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return nil // applied before: its acknowledgement was lost
		}
		applied = true
		for _, b := range []struct {
			table string
			rows  []Row
		}{{minuteTable, minutes}, {hourTable, hours}} {
			for chunk := range slices.Chunk(b.rows, batchRows) {
				if err := upsert(ctx, tx, b.table, chunk); err != nil {
					return err
				}
			}
		}
		if err := writeOperations(ctx, tx, ops, b.Records); err != nil {
			return err
		}
		return writeCrossings(ctx, tx, b.Crossings)
	})
	if err != nil {
		return false, fmt.Errorf("usage: write %d rows, %d operation rows: %w", len(rows), len(b.Operations), schemaErr(err))
	}
	return applied, nil
}

func upsert(ctx context.Context, tx pgx.Tx, table string, rows []Row) error {
	n := len(rows)
	keys, orgs, starts := make([]string, n), make([]string, n), make([]time.Time, n)
	adm, ref, ce, se, cost, mcp := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	for i, r := range rows {
		keys[i], orgs[i], starts[i] = r.KeyID, r.OrgID, r.Start
		adm[i], ref[i], ce[i], se[i], cost[i], mcp[i] = r.Admitted, r.Refused, r.ClientErrors, r.ServerErrors, r.Cost, r.MCP
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf(upsertSQL, table), keys, orgs, starts, adm, ref, ce, se, cost, mcp); err != nil {
		return fmt.Errorf("upsert into %s: %w", table, err)
	}
	return nil
}

// rollup sums rows per (key, Start truncated to unit), sorted by key then
// start — the lock order every writer uses.
func rollup(rows []Row, unit time.Duration) []Row {
	type bucket struct {
		key   string
		start int64
	}
	idx := make(map[bucket]int, len(rows))
	out := make([]Row, 0, len(rows))
	for _, r := range rows {
		start := r.Start.UTC().Truncate(unit)
		b := bucket{r.KeyID, start.Unix()}
		if i, ok := idx[b]; ok {
			out[i].Delta = out[i].Delta.Plus(r.Delta)
			continue
		}
		idx[b] = len(out)
		out = append(out, Row{KeyID: r.KeyID, OrgID: r.OrgID, Start: start, Delta: r.Delta})
	}
	slices.SortFunc(out, func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.KeyID, b.KeyID), a.Start.Compare(b.Start))
	})
	return out
}

// Prune deletes minute rows that started more than MinuteRetention before now,
// hour rows and operation hours that started more than HourRetention before
// now, operations last seen before that (with their coordinates), and the ids of
// batches applied more than MinuteRetention before now.
func Prune(ctx context.Context, pool *pgxpool.Pool, now time.Time) error {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM civicgate.usage_minute WHERE start < $1`, now.Add(-MinuteRetention)); err != nil {
			return fmt.Errorf("minute rows: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM civicgate.usage_hour WHERE start < $1`, now.Add(-HourRetention)); err != nil {
			return fmt.Errorf("hour rows: %w", err)
		}
		if err := pruneOperations(ctx, tx, now.Add(-HourRetention)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM civicgate.quota_crossings WHERE crossed_at < $1`, now.Add(-HourRetention)); err != nil {
			return fmt.Errorf("quota crossings: %w", err)
		}
		// a batch is retried only while its gateway runs: kept as long as minutes
		if _, err := tx.Exec(ctx, `DELETE FROM civicgate.usage_flushes WHERE applied_at < $1`, now.Add(-MinuteRetention)); err != nil {
			return fmt.Errorf("flush ids: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("usage: prune: %w", schemaErr(err))
	}
	return nil
}

// schemaErr marks "relation does not exist" as ErrNotMigrated.
func schemaErr(err error) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "42P01" {
		return fmt.Errorf("%w: %w", ErrNotMigrated, err)
	}
	return err
}
