package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/contract"
)

// TestExactPathRouting: paths that are not exactly ours get the JSON 404,
// never http.ServeMux's HTML redirect to a cleaned path (the gateway's path
// matcher merges slashes, so "//bills" reaches recordsd).
func TestExactPathRouting(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, path := range []string{"//bills", "/bills/", "/bills/../bills", "/./bills", "/BILLS", "//graphql", "/graphql/", "/nope"} {
		status, body, hdr := e.do(http.MethodGet, path, nil, nil)
		if status != 404 || string(body) != `{"error":"Not Found"}` || hdr.Get("Content-Type") != "application/json" {
			t.Errorf("GET %s = %d %q %q, want 404 JSON", path, status, hdr.Get("Content-Type"), body)
		}
	}
	if status, _, _ := e.do(http.MethodGet, "/bills?limit=1", nil, nil); status != 200 {
		t.Errorf("GET /bills = %d", status)
	}
}

// TestClientGoneIsNotAnErrorLog: a request whose client disconnects while PostgreSQL is slow is abandoned
// and logged at info ("client went away"), not as an error-level fault.
func TestClientGoneIsNotAnErrorLog(t *testing.T) {
	e, proxy := newProxiedEnv(t)
	proxy.Stall()
	defer proxy.Restore()
	for _, send := range []func(ctx context.Context) (*http.Request, error){
		func(ctx context.Context) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodPost, e.srv.URL+"/graphql", strings.NewReader(`{"query":"{ bills { nextCursor } }"}`))
		},
		func(ctx context.Context) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+"/bills", nil)
		},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		req, err := send(ctx)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(contract.IdentityHeader, token(t))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("answered %d while PostgreSQL was stalled", resp.StatusCode)
		}
		cancel()
	}
	testenv.Eventually(t, 10*time.Second, "'client went away' lines for both requests", func() error {
		if logs := e.logs.String(); strings.Count(logs, "client went away") < 2 {
			return fmt.Errorf("the log so far:\n%s", logs)
		}
		return nil
	})
	if strings.Contains(e.logs.String(), "level=ERROR") {
		t.Fatalf("an abandoned request was logged as an error:\n%s", e.logs.String())
	}
}

// TestRuntimeStats: GET /debug/runtime needs the gateway identity and reports the goroutine count.
func TestRuntimeStats(t *testing.T) {
	e := newEnv(t, envOpts{})
	status, body, _ := e.do(http.MethodGet, "/debug/runtime", nil, map[string]string{contract.IdentityHeader: ""})
	if status != 401 {
		t.Fatalf("without identity: %d %s", status, body)
	}
	status, body, _ = e.do(http.MethodGet, "/debug/runtime", nil, nil)
	var m map[string]uint64
	if status != 200 || json.Unmarshal(body, &m) != nil || m["goroutines"] == 0 || m["heap_alloc"] == 0 {
		t.Fatalf("runtime stats: %d %s", status, body)
	}
}
