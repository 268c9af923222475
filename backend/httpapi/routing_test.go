package httpapi_test

import (
	"net/http"
	"testing"
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
