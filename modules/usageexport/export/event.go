// Package export turns the usage counted per API key and hour into metering
// events — CloudEvents 1.0 in structured JSON, one per (key, closed hour) —
// and delivers them in batches to a sink, at least once, with a cursor in
// PostgreSQL (docs/design.md D73). It imports no Caddy: the civic_usage_export
// app and `civicgate usage export` are shells around it.
package export

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// The event's fixed attributes (docs/design.md D73).
const (
	SpecVersion = "1.0"
	// EventType is the type of every hour event; a sink's meters select
	// events by it (OpenMeter's meter eventType).
	EventType       = "org.civicgate.usage.hour"
	DataContentType = "application/json"
	// BatchContentType is the media type of a POSTed batch (CloudEvents
	// JSON Event Format, batch mode).
	BatchContentType = "application/cloudevents-batch+json"
	// DefaultSource is the source when none is configured. Every gateway
	// exporting to one sink must use the same source: a sink dedupes by
	// (source, id).
	DefaultSource = "civicgate"
	// DataVersion is the version of Data's shape that the id hashes. It
	// changes only when a field changes meaning or goes away; a field added
	// (operations, key) keeps it, so ids stay the same across upgrades.
	DataVersion = 1
)

// Event is one CloudEvent: the usage of one key in one closed hour.
type Event struct {
	SpecVersion     string    `json:"specversion"`
	ID              string    `json:"id"`
	Source          string    `json:"source"`
	Type            string    `json:"type"`
	Subject         string    `json:"subject"` // the key id: OpenMeter's customer
	Time            time.Time `json:"time"`    // the end of the hour
	DataContentType string    `json:"datacontenttype"`
	Data            Data      `json:"data"`
}

// Data is the event's data: the hour row's counts, under names a meter reads
// with a JSON path ($.requests, $.cost …).
type Data struct {
	OrgID        string    `json:"org_id"`
	KeyID        string    `json:"key_id"`
	Start        time.Time `json:"start"`
	End          time.Time `json:"end"`
	Requests     int64     `json:"requests"` // admitted by the rate limiter
	Refused      int64     `json:"refused"`  // refused with 429
	ClientErrors int64     `json:"client_errors"`
	ServerErrors int64     `json:"server_errors"`
	Cost         int64     `json:"cost"`
	MCPCalls     int64     `json:"mcp_calls"`
	// Key holds the key's name and labels once the key store keeps them;
	// absent until then.
	Key *KeyDetails `json:"key,omitempty"`
	// Operations are the hour's GraphQL operations of the key, present when
	// the gateways record operations (a Source that reads them).
	Operations []Operation `json:"operations,omitempty"`
}

// KeyDetails is what the key store will say about a key beside its id.
type KeyDetails struct {
	Name   string            `json:"name,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

// Operation is one GraphQL operation's counts in the key's hour: the
// document's hash, never its variables.
type Operation struct {
	Hash     string `json:"hash"`
	Type     string `json:"type"` // query, mutation, subscription
	Name     string `json:"name,omitempty"`
	Requests int64  `json:"requests"`
	Errors   int64  `json:"errors"`
	Cost     int64  `json:"cost"`
}

// Hour is what a Source yields: one key's hour row of civicgate.usage_hour
// (modules/ratelimit/usage) and, when recorded, its operations.
type Hour struct {
	KeyID, OrgID string
	Start        time.Time
	Requests     int64 // admitted
	Refused      int64
	ClientErrors int64
	ServerErrors int64
	Cost         int64
	MCPCalls     int64
	Operations   []Operation
}

// EventID is the event's deterministic id: a hash of the data's version, the
// key id and the hour's start, so every delivery of one (key, hour) carries
// the same id whichever gateway sends it.
func EventID(keyID string, start time.Time) string {
	h := sha256.New()
	h.Write([]byte{DataVersion, 0})
	h.Write([]byte(keyID))
	h.Write([]byte{0})
	h.Write([]byte(start.UTC().Format(time.RFC3339)))
	return "uh1-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// NewEvent is the event of hour h from source (DefaultSource when empty).
func NewEvent(h Hour, source string) Event {
	start := h.Start.UTC().Truncate(time.Hour)
	end := start.Add(time.Hour)
	return Event{
		SpecVersion:     SpecVersion,
		ID:              EventID(h.KeyID, start),
		Source:          cmp.Or(source, DefaultSource),
		Type:            EventType,
		Subject:         h.KeyID,
		Time:            end,
		DataContentType: DataContentType,
		Data: Data{
			OrgID: h.OrgID, KeyID: h.KeyID, Start: start, End: end,
			Requests: h.Requests, Refused: h.Refused, ClientErrors: h.ClientErrors, ServerErrors: h.ServerErrors,
			Cost: h.Cost, MCPCalls: h.MCPCalls, Operations: h.Operations,
		},
	}
}

// NewEvents is NewEvent of every hour, in order.
func NewEvents(hours []Hour, source string) []Event {
	out := make([]Event, len(hours))
	for i, h := range hours {
		out[i] = NewEvent(h, source)
	}
	return out
}
