package delivery_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/webhooks/delivery"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// TestFailedAttemptCauses: each failed attempt's cause is recorded per
// delivery and listed (the API's deliveries list) as last_error, one of the
// documented set: the HTTP status, tls, timeout, connection, dns, refused
// address. No last_error carries an address, a URL, a secret or a raw Go
// error.
func TestFailedAttemptCauses(t *testing.T) {
	e := newEnv(t)
	unavailable := newReceiver(t)
	unavailable.setAnswer(func(*http.Request, int) (int, http.Header) { return http.StatusServiceUnavailable, nil })
	gone := newReceiver(t)
	gone.setAnswer(func(*http.Request, int) (int, http.Header) { return http.StatusGone, nil })
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer tlsSrv.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String() + "/hook"
	closed.Close()

	// The timeout first, alone, with a short timeout: a receiver that never
	// answers is a timeout whatever the machine's load. Every other cause is
	// then drawn with a timeout no loaded machine reaches (a TLS handshake
	// under the race detector on a busy machine took more than 500 ms), so
	// each records its own cause, never "timeout".
	slow := newReceiver(t)
	release := slow.holdAll()
	defer close(release)
	slowEp, _ := e.endpoint(slow.URL(), "bills")
	e.db.Insert(t, "bills", 1)
	short := e.dispatcher(dev, func(c *delivery.Config) {
		c.Timeout = 500 * time.Millisecond
		c.Client = dev.Client(500 * time.Millisecond)
	})
	if n := e.drain(short); n != 1 {
		t.Fatalf("%d attempts to the slow receiver, want 1", n)
	}
	checkCause(t, e, slowEp.ID, slow.URL(), delivery.CauseTimeout, 0)
	if err := e.store.DeleteEndpoint(e.ctx, e.org.ID, slowEp.ID); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		url, cause string
		code       int
	}{
		{unavailable.URL(), "status 503", 503},
		{gone.URL(), "status 410", 410},
		{tlsSrv.URL + "/hook", delivery.CauseTLS, 0}, // a certificate no one trusts
		{closedURL, delivery.CauseConnection, 0},
		{"https://no-such-host.invalid/hook", delivery.CauseDNS, 0},
		{"https://10.0.0.1/hook", delivery.CauseRefused, 0},
	}
	eps := make([]store.Endpoint, len(cases))
	for i, c := range cases {
		eps[i], _ = e.endpoint(c.url, "bills")
	}
	e.db.Insert(t, "bills", 1)
	d := e.dispatcher(dev, func(c *delivery.Config) {
		c.Timeout = 30 * time.Second
		c.Client = dev.Client(30 * time.Second)
	})
	if n := e.drain(d); n != len(cases) {
		t.Fatalf("%d attempts, want %d", n, len(cases))
	}
	for i, c := range cases {
		checkCause(t, e, eps[i].ID, c.url, c.cause, c.code)
	}
	// A delivered one lists last_error null.
	ok := newReceiver(t)
	epOK, _ := e.endpoint(ok.URL(), "bills")
	e.db.Insert(t, "bills", 1)
	e.drain(d)
	ds, _, err := e.store.Deliveries(e.ctx, e.org.ID, epOK.ID, 0, 10)
	if err != nil || len(ds) != 1 {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(ds[0]); !strings.Contains(string(b), `"status":"delivered"`) || !strings.Contains(string(b), `"last_error":null`) {
		t.Fatalf("delivered: %s", b)
	}
}

// checkCause requires the one delivery of endpoint id to have failed with
// cause (and HTTP status code, 0 for none), with nothing in it that names an
// address, a URL, a secret or a raw Go error.
func checkCause(t *testing.T, e *env, id, url, cause string, code int) {
	t.Helper()
	ds, _, err := e.store.Deliveries(e.ctx, e.org.ID, id, 0, 10)
	if err != nil || len(ds) != 1 {
		t.Fatalf("%s: %d deliveries %v", url, len(ds), err)
	}
	got := ds[0]
	if got.LastError == nil || *got.LastError != cause {
		t.Errorf("%s: last_error %v, want %q", url, deref(got.LastError), cause)
	}
	if (code == 0) != (got.LastStatusCode == nil) || (code != 0 && *got.LastStatusCode != code) {
		t.Errorf("%s: last_status_code %v, want %d", url, got.LastStatusCode, code)
	}
	b, _ := json.Marshal(got)
	for _, leak := range []string{"127.0.0.1", "10.0.0.1", "http", "invalid", "dial", "x509", "whsec_"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("%s: delivery %s carries %q", url, b, leak)
		}
	}
}

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
