package usage

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// upsertOperationsSQL adds operation hours: the columns as arrays, the
// latency buckets as one flat array, LatencyBuckets per row, added element-wise
// on conflict (docs/design.md D70).
const upsertOperationsSQL = `INSERT INTO civicgate.usage_operation_hour AS u
	(key_id, org_id, start, op_hash, op_type, op_name, requests, errors, cost, latency_buckets, last_seen)
SELECT k, o, s, h, ty, na, rq, er, c, ($10::bigint[])[(n - 1) * 16 + 1 : n * 16], ls
FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[], $9::bigint[], $11::timestamptz[])
	WITH ORDINALITY AS t(k, o, s, h, ty, na, rq, er, c, ls, n)
ORDER BY n
ON CONFLICT (key_id, start, op_hash) DO UPDATE SET
	requests        = u.requests + EXCLUDED.requests,
	errors          = u.errors + EXCLUDED.errors,
	cost            = u.cost + EXCLUDED.cost,
	latency_buckets = ARRAY(SELECT coalesce(a, 0) + coalesce(b, 0)
		FROM unnest(u.latency_buckets, EXCLUDED.latency_buckets) WITH ORDINALITY AS x(a, b, i) ORDER BY i),
	last_seen       = greatest(u.last_seen, EXCLUDED.last_seen)`

// upsertOrgOperationsSQL adds the same rows summed per organization, hour
// and operation (docs/design.md D78), with the type and name first written
// and the latency buckets added as the keys' are (D83).
const upsertOrgOperationsSQL = `INSERT INTO civicgate.usage_operation_org_hour AS u
	(org_id, start, op_hash, op_type, op_name, requests, errors, cost, latency_buckets, last_seen)
SELECT o, s, h, ty, na, rq, er, c, ($9::bigint[])[(n - 1) * 16 + 1 : n * 16], ls
FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::bigint[], $10::timestamptz[])
	WITH ORDINALITY AS t(o, s, h, ty, na, rq, er, c, ls, n)
ORDER BY n
ON CONFLICT (org_id, start, op_hash) DO UPDATE SET
	op_type         = CASE WHEN u.op_type = '' THEN EXCLUDED.op_type ELSE u.op_type END,
	op_name         = CASE WHEN u.op_type = '' THEN EXCLUDED.op_name ELSE u.op_name END,
	requests        = u.requests + EXCLUDED.requests,
	errors          = u.errors + EXCLUDED.errors,
	cost            = u.cost + EXCLUDED.cost,
	latency_buckets = ARRAY(SELECT coalesce(a, 0) + coalesce(b, 0)
		FROM unnest(u.latency_buckets, EXCLUDED.latency_buckets) WITH ORDINALITY AS x(a, b, i) ORDER BY i),
	last_seen       = greatest(u.last_seen, EXCLUDED.last_seen)`

// upsertOperationKeysSQL moves each (organization, operation, key)'s last
// hour forward (docs/design.md D83); a retried batch moves nothing twice,
// as greatest is idempotent.
const upsertOperationKeysSQL = `INSERT INTO civicgate.usage_operation_keys AS u (org_id, op_hash, key_id, last_start)
SELECT o, h, k, s FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]) WITH ORDINALITY AS t(o, h, k, s, n)
ORDER BY n
ON CONFLICT (org_id, op_hash, key_id) DO UPDATE SET last_start = EXCLUDED.last_start
WHERE u.last_start < EXCLUDED.last_start`

// upsertRecordsSQL writes each operation once; a later write only fills a
// text missing until the guard computed shapes, and moves last_seen (the
// meter sends a hash at most once an hour).
const upsertRecordsSQL = `INSERT INTO civicgate.operations AS o (op_hash, op_type, op_name, normalized, first_seen, last_seen)
SELECT h, ty, na, nz, s, s
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[]) WITH ORDINALITY AS t(h, ty, na, nz, s, n)
ORDER BY n
ON CONFLICT (op_hash) DO UPDATE SET
	normalized = CASE WHEN o.normalized = '' THEN EXCLUDED.normalized ELSE o.normalized END,
	first_seen = least(o.first_seen, EXCLUDED.first_seen),
	last_seen  = greatest(o.last_seen, EXCLUDED.last_seen)
WHERE (o.normalized = '' AND EXCLUDED.normalized <> '') OR o.last_seen < EXCLUDED.last_seen OR o.first_seen > EXCLUDED.first_seen`

// upsertCoordinatesSQL writes each operation's coordinates with their
// deprecation reasons (NULL: not deprecated); a later record of the same
// operation sets the reasons its shape gives, so a schema reload that
// deprecates a coordinate, changes a reason or lifts a deprecation reaches
// the rows already written (docs/design.md D77). Unchanged rows are not
// touched.
const upsertCoordinatesSQL = `INSERT INTO civicgate.operation_coordinates AS c (op_hash, coordinate, deprecated_reason)
SELECT h, co, r FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS t(h, co, r, n) ORDER BY n
ON CONFLICT (op_hash, coordinate) DO UPDATE SET deprecated_reason = EXCLUDED.deprecated_reason
WHERE c.deprecated_reason IS DISTINCT FROM EXCLUDED.deprecated_reason`

// writeOperations writes ops (rolled up) and recs in tx, in key, hour,
// hash order and hash order: the lock order every writer uses.
func writeOperations(ctx context.Context, tx pgx.Tx, ops []OperationRow, recs []OperationRecord) error {
	for chunk := range slices.Chunk(ops, batchRows) {
		n := len(chunk)
		keys, orgs, starts, hashes, types, names := make([]string, n), make([]string, n), make([]time.Time, n), make([]string, n), make([]string, n), make([]string, n)
		reqs, errs, costs, lastSeen := make([]int64, n), make([]int64, n), make([]int64, n), make([]time.Time, n)
		buckets := make([]int64, 0, n*LatencyBuckets)
		for i, r := range chunk {
			keys[i], orgs[i], starts[i], hashes[i], types[i], names[i] = r.KeyID, r.OrgID, r.Start, r.Hash, r.Type, r.Name
			reqs[i], errs[i], costs[i], lastSeen[i] = r.Requests, r.Errors, r.Cost, r.LastSeen
			buckets = append(buckets, r.Latency[:]...)
		}
		if _, err := tx.Exec(ctx, upsertOperationsSQL, keys, orgs, starts, hashes, types, names, reqs, errs, costs, buckets, lastSeen); err != nil {
			return fmt.Errorf("upsert into civicgate.usage_operation_hour: %w", err)
		}
	}
	for chunk := range slices.Chunk(orgRollup(ops), batchRows) {
		n := len(chunk)
		orgs, starts, hashes, types, names := make([]string, n), make([]time.Time, n), make([]string, n), make([]string, n), make([]string, n)
		reqs, errs, costs, lastSeen := make([]int64, n), make([]int64, n), make([]int64, n), make([]time.Time, n)
		buckets := make([]int64, 0, n*LatencyBuckets)
		for i, r := range chunk {
			orgs[i], starts[i], hashes[i], types[i], names[i] = r.OrgID, r.Start, r.Hash, r.Type, r.Name
			reqs[i], errs[i], costs[i], lastSeen[i] = r.Requests, r.Errors, r.Cost, r.LastSeen
			buckets = append(buckets, r.Latency[:]...)
		}
		if _, err := tx.Exec(ctx, upsertOrgOperationsSQL, orgs, starts, hashes, types, names, reqs, errs, costs, buckets, lastSeen); err != nil {
			return fmt.Errorf("upsert into civicgate.usage_operation_org_hour: %w", err)
		}
	}
	for chunk := range slices.Chunk(operationKeys(ops), batchRows) {
		n := len(chunk)
		orgs, hashes, keys, starts := make([]string, n), make([]string, n), make([]string, n), make([]time.Time, n)
		for i, r := range chunk {
			orgs[i], hashes[i], keys[i], starts[i] = r.OrgID, r.Hash, r.KeyID, r.Start
		}
		if _, err := tx.Exec(ctx, upsertOperationKeysSQL, orgs, hashes, keys, starts); err != nil {
			return fmt.Errorf("upsert into civicgate.usage_operation_keys: %w", err)
		}
	}
	recs = uniqueRecords(recs)
	for chunk := range slices.Chunk(recs, batchRows) {
		n := len(chunk)
		hashes, types, names, texts, seen := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]time.Time, n)
		var coordHashes, coords []string
		var reasons []*string
		for i, r := range chunk {
			hashes[i], types[i], names[i], texts[i], seen[i] = r.Hash, r.Type, r.Name, r.Normalized, r.Seen
			for _, c := range r.Coordinates {
				coordHashes, coords, reasons = append(coordHashes, r.Hash), append(coords, c), append(reasons, r.reasonOf(c))
			}
		}
		if _, err := tx.Exec(ctx, upsertRecordsSQL, hashes, types, names, texts, seen); err != nil {
			return fmt.Errorf("upsert into civicgate.operations: %w", err)
		}
		if len(coords) > 0 {
			if _, err := tx.Exec(ctx, upsertCoordinatesSQL, coordHashes, coords, reasons); err != nil {
				return fmt.Errorf("upsert into civicgate.operation_coordinates: %w", err)
			}
		}
	}
	return nil
}

// reasonOf is the deprecation reason of coordinate c, nil when the record
// does not mark it deprecated ("" when it does without a reason).
func (r *OperationRecord) reasonOf(c string) *string {
	i := slices.Index(r.Deprecated, c)
	if i < 0 {
		return nil
	}
	reason := ""
	if i < len(r.DeprecationReasons) {
		reason = r.DeprecationReasons[i]
	}
	return &reason
}

// rollupOperations sums rows per (key, hour, hash), sorted that way. The
// type and name are the first row's; last seen the latest.
func rollupOperations(rows []OperationRow) []OperationRow {
	type cellID struct {
		key, hash string
		start     int64
	}
	idx := make(map[cellID]int, len(rows))
	out := make([]OperationRow, 0, len(rows))
	for _, r := range rows {
		r.Start = r.Start.UTC().Truncate(time.Hour)
		id := cellID{r.KeyID, r.Hash, r.Start.Unix()}
		if i, ok := idx[id]; ok {
			o := &out[i]
			o.Requests, o.Errors, o.Cost = o.Requests+r.Requests, o.Errors+r.Errors, o.Cost+r.Cost
			o.Latency.Plus(&r.Latency)
			if r.LastSeen.After(o.LastSeen) {
				o.LastSeen = r.LastSeen
			}
			continue
		}
		idx[id] = len(out)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b OperationRow) int {
		return cmp.Or(cmp.Compare(a.KeyID, b.KeyID), a.Start.Compare(b.Start), cmp.Compare(a.Hash, b.Hash))
	})
	return out
}

// orgRollup sums rolled-up rows per (organization, hour, hash), sorted that
// way: the lock order of the organization rows. KeyID is left out; the type
// and name are the first row's.
func orgRollup(rows []OperationRow) []OperationRow {
	type cellID struct {
		org, hash string
		start     int64
	}
	idx := make(map[cellID]int, len(rows))
	out := make([]OperationRow, 0, len(rows))
	for _, r := range rows {
		id := cellID{r.OrgID, r.Hash, r.Start.Unix()}
		if i, ok := idx[id]; ok {
			o := &out[i]
			o.Requests, o.Errors, o.Cost = o.Requests+r.Requests, o.Errors+r.Errors, o.Cost+r.Cost
			o.Latency.Plus(&r.Latency)
			if r.LastSeen.After(o.LastSeen) {
				o.LastSeen = r.LastSeen
			}
			continue
		}
		idx[id] = len(out)
		r.KeyID = ""
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b OperationRow) int {
		return cmp.Or(cmp.Compare(a.OrgID, b.OrgID), a.Start.Compare(b.Start), cmp.Compare(a.Hash, b.Hash))
	})
	return out
}

// operationKeys is, per (organization, hash, key) of rolled-up rows, the
// latest hour, sorted that way: the lock order of usage_operation_keys.
// Only OrgID, Hash, KeyID and Start are set.
func operationKeys(rows []OperationRow) []OperationRow {
	type pairID struct{ org, hash, key string }
	idx := make(map[pairID]int, len(rows))
	out := make([]OperationRow, 0, len(rows))
	for _, r := range rows {
		id := pairID{r.OrgID, r.Hash, r.KeyID}
		if i, ok := idx[id]; ok {
			if r.Start.After(out[i].Start) {
				out[i].Start = r.Start
			}
			continue
		}
		idx[id] = len(out)
		out = append(out, OperationRow{OrgID: r.OrgID, Hash: r.Hash, KeyID: r.KeyID, Start: r.Start})
	}
	slices.SortFunc(out, func(a, b OperationRow) int {
		return cmp.Or(cmp.Compare(a.OrgID, b.OrgID), cmp.Compare(a.Hash, b.Hash), cmp.Compare(a.KeyID, b.KeyID))
	})
	return out
}

// uniqueRecords keeps one record per hash (a shaped one over one without,
// the earliest Seen), sorted by hash.
func uniqueRecords(recs []OperationRecord) []OperationRecord {
	out := slices.Clone(recs)
	slices.SortFunc(out, func(a, b OperationRecord) int {
		return cmp.Or(cmp.Compare(a.Hash, b.Hash), cmp.Compare(len(b.Normalized), len(a.Normalized)), a.Seen.Compare(b.Seen))
	})
	return slices.CompactFunc(out, func(a, b OperationRecord) bool { return a.Hash == b.Hash })
}

// pruneOperations deletes operation hours that started before cutoff and
// operations last seen before it (their coordinates cascade).
func pruneOperations(ctx context.Context, tx pgx.Tx, cutoff time.Time) error {
	if _, err := tx.Exec(ctx, `DELETE FROM civicgate.usage_operation_hour WHERE start < $1`, cutoff); err != nil {
		return fmt.Errorf("operation hours: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM civicgate.usage_operation_org_hour WHERE start < $1`, cutoff); err != nil {
		return fmt.Errorf("organization operation hours: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM civicgate.usage_operation_keys WHERE last_start < $1`, cutoff); err != nil {
		return fmt.Errorf("operation keys: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM civicgate.operations WHERE last_seen < $1`, cutoff); err != nil {
		return fmt.Errorf("operations: %w", err)
	}
	return nil
}
