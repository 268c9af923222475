package ratelimit

import (
	"net/http"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// TestUsageCountsSocketOperations: a WebSocket upgrade of a key carries an
// OperationRecorder (docs/design.md D76); every operation the guard hands it
// lands on the key's row of that operation with its cost and latency, and
// the upgrade itself, which published no operation, on none.
func TestUsageCountsSocketOperations(t *testing.T) {
	h, l := opUsageHandler(t)
	sub := &contract.GraphQLOperation{Type: "subscription", Name: "OnBook", DocumentHash: "cccc"}
	req := opRequest(false)
	req.Method = http.MethodGet
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Connection", "Upgrade")
	socket := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		q, ok := contract.RequestFrom(r.Context())
		if !ok || q.OperationRecorder() == nil || q.Charger() == nil {
			t.Fatal("the upgrade carries no OperationRecorder or Charger")
		}
		q.OperationRecorder().RecordOperation(sub, 7, 3*time.Millisecond)
		q.OperationRecorder().RecordOperation(sub, 5, 3*time.Millisecond)
		w.WriteHeader(http.StatusSwitchingProtocols)
		return nil
	})
	if err := h.ServeHTTP(&statusWriter{h: http.Header{}}, req, socket); err != nil {
		t.Fatal(err)
	}
	rows, recs := l.usage.ops.Drain()
	if len(rows) != 1 || len(recs) != 1 {
		t.Fatalf("operation rows %+v, records %+v", rows, recs)
	}
	r := rows[0]
	if r.KeyID != "key_ops" || r.OrgID != "org_ops" || r.Hash != "cccc" || r.Type != "subscription" || r.Name != "OnBook" ||
		r.Requests != 2 || r.Errors != 0 || r.Cost != 12 || r.Latency[usage.LatencyBucket(3*time.Millisecond)] != 2 {
		t.Fatalf("socket operation row %+v", r)
	}
}

// TestUsageSocketWithoutOperations: with operations off (or no key) the
// upgrade is charged but carries no recorder.
func TestUsageSocketWithoutOperations(t *testing.T) {
	h, l := opUsageHandler(t)
	l.usage.ops = nil
	req := opRequest(false)
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Connection", "upgrade")
	socket := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		q, _ := contract.RequestFrom(r.Context())
		if q.Charger() == nil || q.OperationRecorder() != nil {
			t.Fatalf("charger %v, recorder %v", q.Charger(), q.OperationRecorder())
		}
		return nil
	})
	if err := h.ServeHTTP(&statusWriter{h: http.Header{}}, req, socket); err != nil {
		t.Fatal(err)
	}
}

// TestUsageStreamLatencyIsItsStart: an event stream's operation is counted
// once, when it ends, with the time to its response's start as its latency,
// not the stream's life; a POST's latency stays the whole chain's.
func TestUsageStreamLatencyIsItsStart(t *testing.T) {
	h, l := opUsageHandler(t)
	sub := &contract.GraphQLOperation{Type: "subscription", Name: "OnBook", DocumentHash: "cccc"}
	stream := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		_, q := contract.AttachRequest(r)
		q.SetGraphQL(contract.GraphQLRequest{Operation: *sub})
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		time.Sleep(300 * time.Millisecond) // the stream's life
		_, err := w.Write([]byte("event: complete\ndata:\n\n"))
		return err
	})
	req := opRequest(false)
	req.Header.Set("Accept", "text/event-stream")
	if err := h.ServeHTTP(&statusWriter{h: http.Header{}}, req, stream); err != nil {
		t.Fatal(err)
	}
	if err := h.ServeHTTP(&statusWriter{h: http.Header{}}, opRequest(false), stream); err != nil {
		t.Fatal(err)
	}
	rows, _ := l.usage.ops.Drain()
	if len(rows) != 1 || rows[0].Requests != 2 {
		t.Fatalf("operation rows %+v", rows)
	}
	lat := rows[0].Latency
	var under256 int64
	for i := range usage.LatencyBucket(256 * time.Millisecond) {
		under256 += lat[i]
	}
	if under256 != 1 || lat[usage.LatencyBucket(300*time.Millisecond)]+lat[usage.LatencyBucket(600*time.Millisecond)] != 1 {
		t.Fatalf("want the stream under 256 ms and the POST's 300 ms in its own bucket: %v", lat)
	}
}

// TestUsageCountsStreamTheClientLeft: reverse_proxy ends a stream whose
// client left with panic(http.ErrAbortHandler); the stream was served and is
// counted, in the minutes and on its operation's row, and the panic goes on
// to net/http.
func TestUsageCountsStreamTheClientLeft(t *testing.T) {
	h, l := opUsageHandler(t)
	sub := &contract.GraphQLOperation{Type: "subscription", Name: "OnBook", DocumentHash: "cccc"}
	aborted := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		_, q := contract.AttachRequest(r)
		q.SetGraphQL(contract.GraphQLRequest{Operation: *sub})
		w.WriteHeader(http.StatusOK)
		panic(http.ErrAbortHandler)
	})
	req := opRequest(false)
	req.Header.Set("Accept", "text/event-stream")
	func() {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Fatalf("recovered %v, want http.ErrAbortHandler to go on", v)
			}
		}()
		_ = h.ServeHTTP(&statusWriter{h: http.Header{}}, req, aborted)
	}()
	if minutes := l.usage.meter.Drain(); len(minutes) != 1 || minutes[0].Admitted != 1 {
		t.Fatalf("minute rows %+v", minutes)
	}
	if rows, _ := l.usage.ops.Drain(); len(rows) != 1 || rows[0].Requests != 1 || rows[0].Errors != 0 || rows[0].Name != "OnBook" {
		t.Fatalf("operation rows %+v", rows)
	}
}

// TestUsageStreamPanicBeforeItsStatus: a stream whose handler panicked before
// any status went out is a server error of its operation.
func TestUsageStreamPanicBeforeItsStatus(t *testing.T) {
	h, l := opUsageHandler(t)
	sub := &contract.GraphQLOperation{Type: "subscription", Name: "OnBook", DocumentHash: "cccc"}
	broken := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		_, q := contract.AttachRequest(r)
		q.SetGraphQL(contract.GraphQLRequest{Operation: *sub})
		panic("broken")
	})
	req := opRequest(false)
	req.Header.Set("Accept", "text/event-stream")
	func() {
		defer func() {
			if v := recover(); v != "broken" {
				t.Fatalf("recovered %v, want the handler's panic to go on", v)
			}
		}()
		_ = h.ServeHTTP(&statusWriter{h: http.Header{}}, req, broken)
	}()
	if minutes := l.usage.meter.Drain(); len(minutes) != 1 || minutes[0].ServerErrors != 1 {
		t.Fatalf("minute rows %+v", minutes)
	}
	if rows, _ := l.usage.ops.Drain(); len(rows) != 1 || rows[0].Requests != 1 || rows[0].Errors != 1 {
		t.Fatalf("operation rows %+v", rows)
	}
}
