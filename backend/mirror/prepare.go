package mirror

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// preparedRecord is a record with everything computed that needs no database: its API content (to diff
// against the snapshot) and that content as JSON (the new snapshot and the event's record).
type preparedRecord struct {
	id      string
	rec     Record
	content map[string]any
	raw     []byte
}

// preparedChunk is a chunk read from the source and prepared for writing.
type preparedChunk struct {
	chunk Chunk
	// recs: one per id, in first-seen order, the last record with an id winning (upstream pages can repeat
	// a record); duplicates counts the others.
	recs       []preparedRecord
	duplicates int
	err        error // reading or preparing failed; the run ends with it
}

func prepare(fam Family, ch Chunk) preparedChunk {
	pc := preparedChunk{chunk: ch}
	index := make(map[string]int, len(ch.Items))
	for _, it := range ch.Items {
		if it.Rec == nil || it.Err != nil {
			continue
		}
		id := it.Rec.RecordID()
		content, raw, err := encode(it.Rec)
		if err != nil {
			pc.err = fmt.Errorf("sync %s: record %s: %w", fam, id, err)
			return pc
		}
		p := preparedRecord{id: id, rec: it.Rec, content: content, raw: raw}
		if k, dup := index[id]; dup {
			pc.duplicates++
			pc.recs[k] = p
			continue
		}
		index[id] = len(pc.recs)
		pc.recs = append(pc.recs, p)
	}
	return pc
}

// readAhead reads and prepares the source's chunks in its own goroutine, one chunk ahead of the writer, so
// encoding the next chunk overlaps the database writing this one (docs/design.md D30). Nothing is written
// here: chunks still commit one at a time, in order. stop ends the goroutine and waits for it.
func readAhead(ctx context.Context, src Source) (next <-chan preparedChunk, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan preparedChunk, 1)
	go func() {
		defer close(out)
		for {
			ch, err := src.Next(ctx)
			var pc preparedChunk
			switch {
			case errors.Is(err, io.EOF):
				pc.err = err
			case err != nil:
				pc.err = fmt.Errorf("sync %s: read %s: %w", src.Family(), src.Name(), err)
			default:
				pc = prepare(src.Family(), ch)
			}
			select {
			case out <- pc:
			case <-ctx.Done():
				return
			}
			if pc.err != nil {
				return
			}
		}
	}()
	return out, func() {
		cancel()
		for range out { // wait for the goroutine: the source is not used after Run returns
		}
	}
}

// The sync timestamp members a record's JSON ends with before it was ever written (importers leave it empty).
var unsyncedSuffixes = [][]byte{[]byte(`,"last_synced_at":""}`), []byte(`,"lastSyncedAt":""}`)}

// encode returns the record as the API shows it (JSON field names) without the sync timestamp, decoded the way
// jsonb round-trips it so stored and fresh content compare equal, and that content as JSON: the record's own
// encoding without its empty sync timestamp (one pass fewer than encoding the map again; jsonb ignores order).
func encode(r Record) (map[string]any, []byte, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, nil, fmt.Errorf("encode: %w", err)
	}
	var content map[string]any
	if err := json.Unmarshal(raw, &content); err != nil {
		return nil, nil, fmt.Errorf("decode: %w", err)
	}
	delete(content, "last_synced_at")
	delete(content, "lastSyncedAt")
	for _, suffix := range unsyncedSuffixes {
		if bytes.HasSuffix(raw, suffix) {
			return content, append(raw[:len(raw)-len(suffix)], '}'), nil
		}
	}
	if !bytes.Contains(raw, []byte(`"last_synced_at"`)) && !bytes.Contains(raw, []byte(`"lastSyncedAt"`)) {
		return content, raw, nil // members carry no sync timestamp
	}
	raw, err = json.Marshal(content) // a timestamp that is set or not last: encode the map
	if err != nil {
		return nil, nil, fmt.Errorf("encode: %w", err)
	}
	return content, raw, nil
}
