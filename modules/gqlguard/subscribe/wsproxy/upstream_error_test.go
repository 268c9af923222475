package wsproxy

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/civicgate/civicgate/modules/gqlguard/subscribe/subhub"
)

// An upstream error message ends an admitted subscription with an error:
// the Checker's failed runs once for it, never for a subscription that
// completes, one the client completes, or one the filter refused
// (docs/design.md D83). gqlgen answers a subscribe its schema does not
// validate with an error message.
func TestUpstreamErrorTellsTheCheckerOnce(t *testing.T) {
	checker := &policyChecker{}
	p := startProxy(t, startUpstream(t), defaultConfig(Config{Checker: checker}))
	c := dial(t, p.addr)
	c.init()
	c.sendText(subscribeMsg("ok", 2))
	expectTicks(t, c, "ok", 2)
	c.sendText(`{"id":"x","type":"subscribe","payload":{"query":"subscription { forbidden }"}}`)
	if m := c.next(); m.Type != "error" || m.ID != "x" {
		t.Fatalf("refused: %+v", m)
	}
	// Valid for the filter's checker, not for the upstream's schema.
	c.sendText(`{"id":"bad","type":"subscribe","payload":{"query":"subscription { ticks }"}}`)
	if m := c.next(); m.Type != "error" || m.ID != "bad" {
		t.Fatalf("upstream's answer: %+v", m)
	}
	// failed ran before the error message's bytes were written.
	if got := checker.failed.Load(); got != 1 {
		t.Fatalf("failed ran %d times, want 1", got)
	}
	// gqlgen follows its error message with a complete for the id, which
	// was no longer active: nothing more is told.
	if m := c.next(); m.Type != "complete" || m.ID != "bad" {
		t.Fatalf("after the error: %+v", m)
	}
	c.sendText(subscribeMsg("bad", 1))
	expectTicks(t, c, "bad", 1)
	c.sendText(subscribeMsg("open", 0))
	c.sendText(`{"id":"open","type":"complete"}`)
	if m := c.next(); m.Type != "complete" || m.ID != "open" {
		t.Fatalf("after the client's complete: %+v", m)
	}
	c.sendText(subscribeMsg("last", 1))
	expectTicks(t, c, "last", 1)
	if got, admitted := checker.failed.Load(), checker.admitted.Load(); got != 1 || admitted != 5 {
		t.Fatalf("failed ran %d times (want 1) of %d admitted (want 5)", got, admitted)
	}
}

// A terminated socket tells the Checker of the hub's error (the upstream's
// error message) once, and never of a subscription that completes.
func TestTerminatedUpstreamErrorTellsTheCheckerOnce(t *testing.T) {
	hub := subhub.New(subhub.Config{URL: "ws://" + startUpstream(t) + "/"})
	t.Cleanup(hub.Close)
	scope := subhub.Scope{Identity: "test"}
	reg := new(Sockets)
	t.Cleanup(reg.CloseAll)
	checker := &policyChecker{}
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cfg := TerminateConfig{Config: Config{Checker: checker}, Upstream: benchUpstream{hub, scope}}
		if err := Terminate(w, r, cfg, reg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	}))
	t.Cleanup(gw.Close)
	c := dial(t, gw.Listener.Addr().String())
	c.init()
	c.sendText(`{"id":"bad","type":"subscribe","payload":{"query":"subscription { ticks }"}}`)
	if m := c.next(); m.Type != "error" || m.ID != "bad" {
		t.Fatalf("upstream's answer: %+v", m)
	}
	if got := checker.failed.Load(); got != 1 {
		t.Fatalf("failed ran %d times, want 1", got)
	}
	c.sendText(subscribeMsg("ok", 2))
	expectTicks(t, c, "ok", 2)
	if got, admitted := checker.failed.Load(), checker.admitted.Load(); got != 1 || admitted != 2 {
		t.Fatalf("failed ran %d times (want 1) of %d admitted (want 2)", got, admitted)
	}
}
