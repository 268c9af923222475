package webhooks

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// hookReceiver is a loopback receiver recording what it gets.
type hookReceiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []struct {
		h    http.Header
		body []byte
	}
}

func newHookReceiver(t *testing.T) *hookReceiver {
	rc := &hookReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, struct {
			h    http.Header
			body []byte
		}{r.Header.Clone(), b})
		rc.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *hookReceiver) waitN(t *testing.T, n int) []struct {
	h    http.Header
	body []byte
} {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rc.mu.Lock()
		got := append(rc.reqs[:0:0], rc.reqs...)
		rc.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("receiver got %d requests, want %d", len(got), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
