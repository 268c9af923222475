package mirror

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	"github.com/jackc/pgx/v5"
)

type stored struct {
	content map[string]any
	deleted bool
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
