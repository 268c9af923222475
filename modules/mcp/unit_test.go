package mcp

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/contract"
)

// The GraphQL request of a call carries the live request's headers but
// those of the MCP exchange, its body and conditionals; JSON in and out.
func TestSubrequestHeader(t *testing.T) {
	src := http.Header{
		"Mcp-Session-Id": {"s"}, "Mcp-Protocol-Version": {"2025-11-25"}, callHeader: {"1"},
		"Accept": {"application/json, text/event-stream"}, "Accept-Encoding": {"gzip"}, "Content-Length": {"99"},
		"Content-Type": {"application/json; charset=utf-8"}, "If-None-Match": {`"x"`}, "Origin": {"https://a.example"},
		"X-Civic-Identity": {"jwt"}, "User-Agent": {"agent"}, "Traceparent": {"00-1-2-01"},
	}
	h := subrequestHeader(src)
	for _, k := range []string{"Mcp-Session-Id", "Mcp-Protocol-Version", callHeader, "Accept-Encoding", "Content-Length", "If-None-Match", "Origin"} {
		if _, ok := h[k]; ok {
			t.Errorf("%s kept", k)
		}
	}
	for k, v := range map[string]string{"X-Civic-Identity": "jwt", "User-Agent": "agent", "Traceparent": "00-1-2-01",
		"Content-Type": "application/json", "Accept": "application/json"} {
		if h.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, h.Get(k), v)
		}
	}
	h.Add("User-Agent", "more") // an Add downstream must not write into the live request's values
	if got := src["User-Agent"]; len(got) != 1 {
		t.Errorf("the live request's User-Agent became %v", got)
	}
}

// The answer writer keeps at most its limit and refuses past it, so the
// proxy stops copying.
func TestCaptureBounded(t *testing.T) {
	c := &capture{header: http.Header{}, limit: 10}
	c.WriteHeader(http.StatusEarlyHints) // informational: not the status
	if n, err := c.Write([]byte("0123456789")); n != 10 || err != nil {
		t.Fatal(n, err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, errAnswerTooLarge) || !c.over {
		t.Fatalf("past the limit: %v %v", err, c.over)
	}
	if c.status != http.StatusOK || string(c.body) != "0123456789" {
		t.Errorf("status %d body %q", c.status, c.body)
	}
}

// Each answer of the chain becomes its result and outcome.
func TestRender(t *testing.T) {
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	for name, c := range map[string]struct {
		a       answer
		outcome string
		text    string
	}{
		"data":        {answer{status: 200, header: hdr(), body: []byte(`{"data":{"a":1}}`)}, callOK, `{"a":1}`},
		"errors":      {answer{status: 200, header: hdr(), body: []byte(`{"data":null,"errors":[{"message":"boom"}]}`)}, callGraphQLError, "GraphQL error: boom"},
		"guard 400":   {answer{status: 400, header: hdr(), body: []byte(`{"errors":[{"message":"Query too deep"}]}`)}, callRefused, "GraphQL error: Query too deep"},
		"429":         {answer{status: 429, header: hdr("Retry-After", "12", "RateLimit", `"free";r=0;t=12`, "RateLimit-Policy", `"free";q=30;w=60`), body: contract.BodyRateLimited}, callRateLimited, "Rate limit exceeded (HTTP 429; retry after 12 s)"},
		"502":         {answer{status: 502, header: hdr(), body: contract.BodyBadGateway}, callUpstreamError, "Bad Gateway (HTTP 502)"},
		"html":        {answer{status: 200, header: hdr(), body: []byte(`<html>`)}, callUpstreamError, "without a GraphQL result"},
		"too large":   {answer{tooLarge: true}, callTooLarge, "larger than one tool result"},
		"canceled":    {answer{canceled: true}, callCanceled, "canceled"},
		"401 revoked": {answer{status: 401, header: hdr(), body: contract.BodyKeyRevoked}, callRefused, "API key revoked (HTTP 401)"},
	} {
		outcome, res, err := render(c.a)
		if err != nil || outcome != c.outcome || !strings.Contains(res.Content[0].(*mcpsdk.TextContent).Text, c.text) {
			t.Errorf("%s: %s %v %+v, want %s with %q", name, outcome, err, res, c.outcome, c.text)
		}
		if name == "429" && (res.Meta["retryAfter"] != 12 || res.Meta["rateLimit"] != `"free";r=0;t=12` || res.Meta["rateLimitPolicy"] != `"free";q=30;w=60`) {
			t.Errorf("429 meta %v", res.Meta)
		}
	}
	// A 403 naming the families lacked is the JSON-RPC error of a tool
	// outside the tier.
	outcome, res, err := render(answer{status: 403, header: hdr(contract.HeaderRefusedFamily, "loans"), body: contract.BodyNotEntitled})
	var rpc *jsonrpc.Error
	if outcome != callNotEntitled || res != nil || !errors.As(err, &rpc) || rpc.Code != codeNotEntitled || rpc.Message != contract.MsgNotEntitled ||
		string(rpc.Data) != `{"refusedFamily":"loans"}` {
		t.Errorf("403: %s %v %v", outcome, res, err)
	}
}

// A GET stream whose client stops reading does not hold the writer (or
// grow anything): a write that cannot complete fails at its deadline.
func TestStreamWriteDeadline(t *testing.T) {
	failed := make(chan error, 1)
	chunk := make([]byte, 64<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &streamWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: 200 * time.Millisecond}
		for {
			if _, err := sw.Write(chunk); err != nil {
				failed <- err
				return
			}
			_ = sw.FlushError()
		}
	}))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	// The client never reads: once the socket buffers fill, a write waits
	// for its deadline and fails.
	var got error
	testenv.EventuallyTrue(t, 30*time.Second, "a write to the stalled stream failed", func() bool {
		select {
		case got = <-failed:
			return true
		default:
			return false
		}
	})
	var ne net.Error
	if !errors.As(got, &ne) || !ne.Timeout() {
		t.Errorf("the write failed with %v, want a timeout", got)
	}
}
