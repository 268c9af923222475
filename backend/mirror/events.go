package mirror

import (
	"encoding/json"
	"time"
)

var eventColumns = []string{"family", "record_id", "type", "changed_fields", "record", "source", "occurred_at"}

// eventColumnsTraced adds the writer's traceparent (migration 0104): written only by a traced, sampled run,
// so an untraced sync works on a database without the column too.
var eventColumnsTraced = append(append([]string(nil), eventColumns...), "traceparent")

func withSyncedAt(fam Family, content map[string]any, now time.Time) map[string]any {
	out := make(map[string]any, len(content)+1)
	for k, v := range content {
		out[k] = v
	}
	key := "last_synced_at"
	if fam == Bills {
		key = "lastSyncedAt"
	}
	if fam != Members { // Member has no sync timestamp field in the API
		out[key] = now.Format("2006-01-02T15:04:05.000000Z")
	}
	return out
}

// syncedAtJSON is the `"last_synced_at":"…"` member (bills: lastSyncedAt; members: none) an event's record
// carries, as JSON text to splice into the record's JSON.
func syncedAtJSON(fam Family, now time.Time) []byte {
	if fam == Members {
		return nil
	}
	key := "last_synced_at"
	if fam == Bills {
		key = "lastSyncedAt"
	}
	return []byte(`"` + key + `":"` + now.Format("2006-01-02T15:04:05.000000Z") + `"`)
}

// withSyncedAtJSON is withSyncedAt on the record's JSON object text: the record as the event carries it,
// without decoding and encoding the record again.
func withSyncedAtJSON(raw, member []byte) json.RawMessage {
	if len(member) == 0 || len(raw) < 2 || raw[len(raw)-1] != '}' {
		return raw
	}
	out := make([]byte, 0, len(raw)+len(member)+1)
	out = append(out, raw[:len(raw)-1]...)
	if len(raw) > 2 {
		out = append(out, ',')
	}
	out = append(out, member...)
	return append(out, '}')
}
