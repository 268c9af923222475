package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Event is one change_events row.
type Event struct {
	Seq           int64
	ID            string // event_id: the webhook-id
	Family        string
	RecordID      string
	Type          string
	ChangedFields []string
	Record        json.RawMessage
	OccurredAt    time.Time
	// Traceparent is the W3C traceparent of the span that wrote the event, read only for deliveries
	// (see ReadTraceparents); "" if none. Never part of the envelope.
	Traceparent string
}

// Envelope is the JSON shape of an event (docs/design.md D14), in the change feed
// and in webhook bodies alike.
type Envelope struct {
	ID         string    `json:"id"`
	Type       string    `json:"type"`
	Cursor     *string   `json:"cursor"`
	OccurredAt time.Time `json:"occurred_at"`
	Data       any       `json:"data"`
}

// EventData is the data member of a record event.
type EventData struct {
	Family        string          `json:"family"`
	RecordID      string          `json:"record_id"`
	ChangedFields []string        `json:"changed_fields"`
	Record        json.RawMessage `json:"record"`
}

// Envelope renders e.
func (e Event) Envelope() Envelope {
	c := EncodeCursor(e.Seq)
	cf := e.ChangedFields
	if cf == nil {
		cf = []string{}
	}
	rec := e.Record
	if len(rec) == 0 {
		rec = json.RawMessage("null")
	}
	return Envelope{
		ID: e.ID, Type: e.Family + "." + e.Type, Cursor: &c, OccurredAt: e.OccurredAt.UTC(),
		Data: EventData{Family: e.Family, RecordID: e.RecordID, ChangedFields: cf, Record: rec},
	}
}

// Cursors are opaque to clients: base64url of "ce1:<change_events.id>". They
// are positions in a feed every entitled caller sees alike, so they carry no
// authority and are not signed (a signed cursor would die with a key
// rotation); a cursor that does not decode is a client error.
const cursorPrefix = "ce1:"

// ErrBadCursor is returned by DecodeCursor.
var ErrBadCursor = errors.New("store: malformed cursor")

// EncodeCursor returns the cursor of the event with id seq.
func EncodeCursor(seq int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.FormatInt(seq, 10)))
}

// DecodeCursor returns the event id in c ("" = 0, before every event).
func DecodeCursor(c string) (int64, error) {
	if c == "" {
		return 0, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, ErrBadCursor
	}
	s, ok := strings.CutPrefix(string(raw), cursorPrefix)
	if !ok {
		return 0, ErrBadCursor
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != s {
		return 0, ErrBadCursor
	}
	return n, nil
}

const eventColumns = `id, event_id::text, family, record_id, type, changed_fields, record, occurred_at`

func scanEvents(rows pgx.Rows) ([]Event, error) { return scanEventRows(rows, false) }

// Changes returns up to limit events after seq in the given families, oldest
// first, and whether more follow.
//
// No committed event is ever skipped: writers draw ids and commit while
// holding pg_advisory_xact_lock(contract.ChangeEventsLockKey), and PostgreSQL
// makes a commit visible before it releases the transaction's locks, so the
// events a snapshot sees always form a gap-free prefix of the ids drawn so far
// (ids of rolled-back transactions are never filled). Reading therefore needs
// no lock; the fan-out additionally takes the lock in shared mode (see FanOut).
func (s *Store) Changes(ctx context.Context, after int64, families []string, limit int) ([]Event, bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+eventColumns+` FROM change_events
		WHERE id > $1 AND family = ANY($2) ORDER BY id LIMIT $3`, after, families, limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("store: changes: %w", err)
	}
	evs, err := scanEvents(rows)
	if err != nil {
		return nil, false, err
	}
	more := len(evs) > limit
	if more {
		evs = evs[:limit]
	}
	return evs, more, nil
}
