package export

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
)

// TestEventsAreCloudEvents: a batch parses with the CloudEvents SDK, every
// event validates, carries the documented attributes and data, and its id
// depends on the key and the hour only.
func TestEventsAreCloudEvents(t *testing.T) {
	hours := []Hour{
		{KeyID: "key_a", OrgID: "org_1", Start: h0.Add(15 * time.Minute),
			Requests: 7, Refused: 1, ClientErrors: 2, ServerErrors: 3, Cost: 40, MCPCalls: 5},
		{KeyID: "key_b", OrgID: "org_1", Start: h0},
		{KeyID: "key_a", OrgID: "org_1", Start: h0.Add(time.Hour),
			Operations: []Operation{{Hash: "sha256:ab", Type: "query", Name: "Bills", Requests: 3, Cost: 9}}},
	}
	events := NewEvents(hours, "")
	body, err := json.Marshal(events)
	if err != nil {
		t.Fatal(err)
	}
	var parsed []event.Event
	if err := json.Unmarshal(body, &parsed); err != nil {
		t.Fatalf("the CloudEvents SDK cannot read the batch: %v", err)
	}
	for _, e := range parsed {
		if err := e.Validate(); err != nil {
			t.Errorf("%s: %v", e.ID(), err)
		}
	}
	e := parsed[0]
	if e.SpecVersion() != "1.0" || e.Type() != EventType || e.Source() != DefaultSource || e.Subject() != "key_a" ||
		!e.Time().Equal(h0.Add(time.Hour)) || e.DataContentType() != "application/json" {
		t.Errorf("attributes: %s", e)
	}
	var d Data
	if err := e.DataAs(&d); err != nil {
		t.Fatal(err)
	}
	want := Data{OrgID: "org_1", KeyID: "key_a", Start: h0, End: h0.Add(time.Hour), Requests: 7, Refused: 1,
		ClientErrors: 2, ServerErrors: 3, Cost: 40, MCPCalls: 5}
	if d.OrgID != want.OrgID || !d.Start.Equal(want.Start) || !d.End.Equal(want.End) || d.Requests != 7 || d.Refused != 1 ||
		d.ClientErrors != 2 || d.ServerErrors != 3 || d.Cost != 40 || d.MCPCalls != 5 || d.Operations != nil || d.Key != nil {
		t.Errorf("data = %+v, want %+v", d, want)
	}
	if strings.Contains(string(parsed[0].Data()), "operations") || !strings.Contains(string(parsed[2].Data()), `"operations":[{"hash":"sha256:ab"`) {
		t.Errorf("operations: present only when recorded: %s / %s", parsed[0].Data(), parsed[2].Data())
	}
	// deterministic: the same (key, hour) is the same id whatever the counts,
	// the minute within the hour or the source; another key or hour is not
	again := NewEvent(Hour{KeyID: "key_a", Start: h0, Requests: 99}, "other")
	if again.ID != events[0].ID {
		t.Errorf("id changed: %s vs %s", again.ID, events[0].ID)
	}
	seen := map[string]bool{}
	for _, e := range events {
		if seen[e.ID] {
			t.Errorf("id %s twice", e.ID)
		}
		seen[e.ID] = true
	}
	if EventID("key_a", h0) != "uh1-"+strings.TrimPrefix(events[0].ID, "uh1-") || len(events[0].ID) != 36 {
		t.Errorf("id shape: %s", events[0].ID)
	}
}

// TestBackoffGrowsWithJitterAndIsBounded: every wait lies in [d/2, d) with d
// doubling from BackoffBase up to BackoffMax, whatever the failure count.
func TestBackoffGrowsWithJitterAndIsBounded(t *testing.T) {
	for n, d := range map[int]time.Duration{1: BackoffBase, 2: 2 * BackoffBase, 3: 4 * BackoffBase, 30: BackoffMax, 1000: BackoffMax} {
		lo, hi := Backoff(n, func() float64 { return 0 }), Backoff(n, func() float64 { return 0.999999 })
		if lo != d/2 || hi >= d || hi < d-d/1000 {
			t.Errorf("n=%d: [%s, %s], want [%s, %s)", n, lo, hi, d/2, d)
		}
	}
}

// TestClosedBefore: an hour is closed once its end plus the settle delay has
// passed, not a moment before.
func TestClosedBefore(t *testing.T) {
	settle := 2 * time.Minute
	for now, want := range map[time.Time]time.Time{
		h0.Add(time.Hour + 2*time.Minute - time.Second): h0,                // h0's hour still settling
		h0.Add(time.Hour + 2*time.Minute):               h0.Add(time.Hour), // h0's hour closed
		h0.Add(time.Hour + 59*time.Minute):              h0.Add(time.Hour),
	} {
		if got := ClosedBefore(now, settle); !got.Equal(want) {
			t.Errorf("at %s: %s, want %s", now, got, want)
		}
	}
}
