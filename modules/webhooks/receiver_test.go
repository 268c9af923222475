package webhooks

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
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
	var got []struct {
		h    http.Header
		body []byte
	}
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("the receiver to get %d requests", n), func() error {
		rc.mu.Lock()
		got = append(rc.reqs[:0:0], rc.reqs...)
		rc.mu.Unlock()
		if len(got) < n {
			return fmt.Errorf("%d requests so far", len(got))
		}
		return nil
	})
	return got
}
