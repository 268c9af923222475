package ratelimit

import (
	"net/http"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/civicgate/civicgate/modules/contract"
)

// TestUsageSocketOperationError: an admitted subscription the upstream ended
// with an error counts one error on its row, and no request, cost or
// latency beyond its admission's (docs/design.md D83); the row is the hour
// of its admission.
func TestUsageSocketOperationError(t *testing.T) {
	h, l := opUsageHandler(t)
	sub := &contract.GraphQLOperation{Type: "subscription", Name: "OnBook", DocumentHash: "cccc"}
	req := opRequest(false)
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Connection", "Upgrade")
	admitted := time.Now()
	socket := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		q, _ := contract.RequestFrom(r.Context())
		rec := q.OperationRecorder()
		rec.RecordOperation(sub, 7, 3*time.Millisecond)
		rec.RecordOperation(sub, 5, 3*time.Millisecond)
		rec.RecordOperationError(sub, admitted)
		w.WriteHeader(http.StatusSwitchingProtocols)
		return nil
	})
	if err := h.ServeHTTP(&statusWriter{h: http.Header{}}, req, socket); err != nil {
		t.Fatal(err)
	}
	rows, _ := l.usage.ops.Drain()
	if len(rows) != 1 {
		t.Fatalf("operation rows %+v", rows)
	}
	var latencies int64
	for _, n := range rows[0].Latency {
		latencies += n
	}
	if r := rows[0]; r.Requests != 2 || r.Errors != 1 || r.Cost != 12 || latencies != 2 || r.Name != "OnBook" {
		t.Fatalf("row %+v", r)
	}

	// An error an hour later still lands on the admission's hour: its own
	// cell after a flush, adding only the error.
	rec := &upgradeCharger{limiter: l, keyID: "key_ops", org: "org_ops"}
	hourAgo := admitted.Add(-time.Hour)
	rec.RecordOperationError(sub, hourAgo)
	rows, _ = l.usage.ops.Drain()
	if len(rows) != 1 || rows[0].Requests != 0 || rows[0].Errors != 1 || !rows[0].Start.Equal(hourAgo.UTC().Truncate(time.Hour)) {
		t.Fatalf("error-only row %+v", rows)
	}
}

// TestUsageStreamFailedIsAnError: an event stream answered 200 whose
// upstream ended it with an error (the guard marks the request) counts one
// request and one error; an unmarked one none.
func TestUsageStreamFailedIsAnError(t *testing.T) {
	h, l := opUsageHandler(t)
	sub := &contract.GraphQLOperation{Type: "subscription", Name: "OnBook", DocumentHash: "cccc"}
	stream := func(fail bool) caddyhttp.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) error {
			_, q := contract.AttachRequest(r)
			q.SetGraphQL(contract.GraphQLRequest{Operation: *sub})
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			if fail {
				q.SetOperationFailed()
			}
			return nil
		}
	}
	for _, fail := range []bool{true, false} {
		req := opRequest(false)
		req.Header.Set("Accept", "text/event-stream")
		if err := h.ServeHTTP(&statusWriter{h: http.Header{}}, req, stream(fail)); err != nil {
			t.Fatal(err)
		}
	}
	if rows, _ := l.usage.ops.Drain(); len(rows) != 1 || rows[0].Requests != 2 || rows[0].Errors != 1 {
		t.Fatalf("operation rows %+v", rows)
	}
}
