package gqlcache

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// TestOffPassesEverythingThrough: `enabled off` sends every request on,
// stores nothing (it has no store to touch) and says "off" in the log.
func TestOffPassesEverythingThrough(t *testing.T) {
	h := &Handler{Off: true}
	calls := 0
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		calls++
		_, err := w.Write([]byte(`{"data":{}}`))
		return err
	})
	for range 3 {
		repl := caddy.NewReplacer()
		repl.Set("graphql.operation_type", "query")
		r := httptest.NewRequest(http.MethodPost, "/graphql", nil)
		r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
		w := httptest.NewRecorder()
		if err := h.ServeHTTP(w, r, next); err != nil {
			t.Fatal(err)
		}
		if v, _ := repl.GetString(PlaceholderCache); v != "off" || w.Header().Get("Cache-Status") != "" {
			t.Fatalf("{graphql.cache}=%q Cache-Status=%q", v, w.Header().Get("Cache-Status"))
		}
	}
	if calls != 3 {
		t.Fatalf("%d of 3 requests reached the upstream", calls)
	}
}
