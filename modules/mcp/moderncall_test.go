package mcp

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// A modern tools/call is charged to the key's API rate once, by
// civic_rate_limit on its GraphQL request, before its body is read
// (moderncall.go, docs/design.md D80): under `tier tiny 3/m` three calls
// are served (a second charge would refuse the second), the fourth is 429
// -31032 without an id, and a fifth whose body fails the test if read is
// refused the same way.
func TestModernCallRateFromHeaders(t *testing.T) {
	g := newGateway(t)
	tiny := g.issue(t, "tiny")
	g.start(t, gatewayConfig{})
	call := []byte(modernBody("4", "tools/call", `"name":"get_book","arguments":{"id":"b1"}`))
	hdr := modernHeaders("tools/call", "get_book")
	for i := range 3 {
		res := modernResult(t, g.send(t, http.MethodPost, "/v1/mcp", tiny.Key, call, hdr))
		if string(res["isError"]) == "true" {
			t.Fatalf("call %d: %s", i+1, res["content"])
		}
	}
	before := g.scrape(t, `civicgate_mcp_refusals_total{reason="rate_limited"}`)
	r := g.send(t, http.MethodPost, "/v1/mcp", tiny.Key, call, hdr)
	checkRateLimited(t, r.status, r.header, r.body)

	app, err := caddy.ActiveContext().App("http")
	if err != nil {
		t.Fatal(err)
	}
	for _, srv := range app.(*caddyhttp.App).Servers {
		w := &recorder{h: http.Header{}}
		req := httptest.NewRequest(http.MethodPost, "/v1/mcp", unreadable{t})
		(&chain{}).modern(req, tiny.Key, "tools/call", "get_book")
		srv.ServeHTTP(w, req)
		checkRateLimited(t, w.status, w.h, w.body.String())
	}
	if after := g.scrape(t, `civicgate_mcp_refusals_total{reason="rate_limited"}`); after != before+2 {
		t.Errorf("rate_limited refusals %v → %v, want +2", before, after)
	}
}

func checkRateLimited(t *testing.T, status int, h http.Header, body string) {
	t.Helper()
	var msg struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code    int
			Message string
			Data    struct {
				RetryAfter      int    `json:"retryAfter"`
				RateLimitPolicy string `json:"rateLimitPolicy"`
			}
		}
	}
	if status != http.StatusTooManyRequests || json.Unmarshal([]byte(body), &msg) != nil || msg.ID != nil ||
		msg.Error.Code != codeModernRateLimited || !strings.HasPrefix(msg.Error.Message, "Rate limit exceeded (HTTP 429; retry after ") ||
		msg.Error.Data.RetryAfter < 1 || !strings.HasPrefix(msg.Error.Data.RateLimitPolicy, `"tiny"`) ||
		h.Get("Retry-After") == "" || !strings.HasPrefix(h.Get("RateLimit-Policy"), `"tiny"`) {
		t.Errorf("want 429 -31032 without an id, got %d %v %s", status, h, body)
	}
}
