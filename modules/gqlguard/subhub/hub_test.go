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
	"github.com/civicgate/civicgate/internal/testenv"
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
