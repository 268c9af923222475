package mirror

import (
	"context"
	"fmt"
	"reflect"
	"sort"

	"github.com/jackc/pgx/v5"
)

type stored struct {
	content map[string]any
	deleted bool
}

// known is what the database holds for a chunk's ids, read in one round trip: the last imported content
// (prev; absent when never imported), and the table's rows (live: not marked deleted; present: any row).
type known struct {
	prev          map[string]stored
	live, present map[string]bool
}

func lookup(ctx context.Context, tx pgx.Tx, fam Family, w writer, ids []string) (known, error) {
	k := known{prev: make(map[string]stored, len(ids)), live: make(map[string]bool, len(ids)), present: make(map[string]bool, len(ids))}
	if len(ids) == 0 {
		return k, nil
	}
	rows, err := tx.Query(ctx, `SELECT u.id, s.record_id IS NOT NULL, s.content, s.deleted_at IS NOT NULL,
			t.`+w.idCol+` IS NOT NULL, t.deleted_at IS NULL
		FROM unnest($2::text[]) AS u(id)
		LEFT JOIN sync_snapshots s ON s.family = $1 AND s.record_id = u.id
		LEFT JOIN `+w.table+` t ON t.`+w.idCol+` = u.id`, string(fam), ids)
	if err != nil {
		return k, fmt.Errorf("sync %s: load snapshots and rows: %w", fam, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var hasSnap, hasRow, rowLive bool
		var s stored
		if err := rows.Scan(&id, &hasSnap, &s.content, &s.deleted, &hasRow, &rowLive); err != nil {
			return k, fmt.Errorf("sync %s: scan snapshot: %w", fam, err)
		}
		if hasSnap {
			k.prev[id] = s
		}
		k.present[id] = hasRow
		k.live[id] = hasRow && rowLive
	}
	if err := rows.Err(); err != nil {
		return k, fmt.Errorf("sync %s: load snapshots and rows: %w", fam, err)
	}
	return k, nil
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
