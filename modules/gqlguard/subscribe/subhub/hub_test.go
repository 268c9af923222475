package subhub

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/civicgate/civicgate/examples/other-backend/library"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// dialRecorder is an Observer that records the trace context and outcome of
// each dial.
type dialRecorder struct {
	nopObserver
	mu    sync.Mutex
	dials []recordedDial
}

type recordedDial struct {
	trace     context.Context
	reconnect bool
	err       error
	done      bool
}

func (d *dialRecorder) UpstreamDial(trace context.Context, reconnect bool) func(error) {
	d.mu.Lock()
	i := len(d.dials)
	d.dials = append(d.dials, recordedDial{trace: trace, reconnect: reconnect})
	d.mu.Unlock()
	return func(err error) {
		d.mu.Lock()
		d.dials[i].err, d.dials[i].done = err, true
		d.mu.Unlock()
	}
}

func (d *dialRecorder) snapshot() []recordedDial {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]recordedDial(nil), d.dials...)
}

type discardSink struct{}

func (discardSink) Next([]byte) bool { return true }
func (discardSink) End([]byte)       {}

type traceMarker struct{}

// TestDialTracedByTheOpeningSubscriber: the Scope.Trace of the subscriber
// that opens an upstream connection is what the Observer's UpstreamDial
// gets (it parents the connection's spans); a second subscriber of the same
// identity opens nothing, and a scope without Trace dials with
// context.Background().
func TestDialTracedByTheOpeningSubscriber(t *testing.T) {
	engine := httptest.NewServer(library.NewHandler(library.NewCatalog(), library.NewLoanEvents(), library.Options{KeepAlive: time.Hour}))
	t.Cleanup(engine.Close)
	rec := &dialRecorder{}
	hub := New(Config{URL: "ws" + strings.TrimPrefix(engine.URL, "http") + "/graphql", Observer: rec})
	t.Cleanup(hub.Close)
	header := func() (http.Header, error) { return http.Header{}, nil }
	payload := []byte(`{"query":"subscription { loanEvents { kind } }"}`)

	opener := context.WithValue(context.Background(), traceMarker{}, "opener")
	stop1, err := hub.Subscribe(Scope{Identity: "a", Header: header, Trace: opener}, payload, discardSink{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop1()
	later := context.WithValue(context.Background(), traceMarker{}, "later")
	stop2, err := hub.Subscribe(Scope{Identity: "a", Header: header, Trace: later}, payload, discardSink{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop2()
	stop3, err := hub.Subscribe(Scope{Identity: "b", Header: header}, payload, discardSink{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop3()

	testenv.Eventually(t, 30*time.Second, "both connections dialled", func() error {
		d := rec.snapshot()
		if len(d) != 2 || !d[0].done || !d[1].done {
			return errors.New("dials not finished")
		}
		return nil
	})
	byMarker := map[any]recordedDial{}
	for _, d := range rec.snapshot() {
		if d.err != nil || d.reconnect {
			t.Fatalf("dial %+v, want a first dial that connected", d)
		}
		byMarker[d.trace.Value(traceMarker{})] = d
	}
	if _, ok := byMarker["opener"]; !ok {
		t.Errorf("identity a's dial was not traced by the subscriber that opened it: %v", byMarker)
	}
	if _, ok := byMarker["later"]; ok {
		t.Error("the second subscriber of identity a traced a dial it did not cause")
	}
	if d, ok := byMarker[nil]; !ok || d.trace == nil {
		t.Errorf("identity b (no Trace) did not dial with a non-nil background context: %v", byMarker)
	}
}

// TestReconnectAssertsAPresentSubscriber: two subscribers of one identity
// scope share a connection opened with the first's headers; once the first
// has left and the connection is cut, the reconnect's handshake carries the
// second's headers — not those of a subscriber gone (revoked, say).
func TestReconnectAssertsAPresentSubscriber(t *testing.T) {
	events := library.NewLoanEvents()
	engine := library.NewHandler(library.NewCatalog(), events, library.Options{KeepAlive: time.Hour})
	var mu sync.Mutex
	var handshakes []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		handshakes = append(handshakes, r.Header.Get("X-Who"))
		mu.Unlock()
		engine.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	proxy := testenv.NewProxy(t, strings.TrimPrefix(srv.URL, "http://"))
	hub := New(Config{URL: "ws://" + proxy.Addr() + "/graphql", MinBackoff: 10 * time.Millisecond})
	t.Cleanup(hub.Close)
	who := func(name string) func() (http.Header, error) {
		return func() (http.Header, error) { return http.Header{"X-Who": {name}}, nil }
	}
	payload := []byte(`{"query":"subscription { loanEvents { kind } }"}`)
	stopFirst, err := hub.Subscribe(Scope{Identity: "families", Dedup: "families", Header: who("first")}, payload, discardSink{})
	if err != nil {
		t.Fatal(err)
	}
	stopSecond, err := hub.Subscribe(Scope{Identity: "families", Dedup: "families", Header: who("second")}, payload, discardSink{})
	if err != nil {
		t.Fatal(err)
	}
	defer stopSecond()
	testenv.EventuallyTrue(t, 30*time.Second, "the shared upstream subscription", func() bool { return events.Subscribers() == 1 })
	stopFirst()
	proxy.Cut()
	testenv.EventuallyTrue(t, 30*time.Second, "the engine to see the cut", func() bool { return events.Subscribers() == 0 })
	proxy.Restore()
	testenv.EventuallyTrue(t, 30*time.Second, "the re-subscription", func() bool { return events.Subscribers() == 1 })
	mu.Lock()
	defer mu.Unlock()
	if len(handshakes) < 2 || handshakes[0] != "first" || handshakes[len(handshakes)-1] != "second" {
		t.Fatalf("handshakes asserted %q, want first, then (after the first left) second", handshakes)
	}
}
