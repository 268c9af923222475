package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/civicgate/civicgate/modules/mcp/tooldef"
)

// A modern tools/call of a tool the tier has (docs/design.md D80) is charged
// to the caller's API rate before its body is read, by the one limiter that
// charges it: civic_mcp hands the call's GraphQL request to the rest of the
// route (civic_rate_limit first) with a body that is the JSON-RPC message
// still unread. civic_rate_limit decides from what civic_auth resolved from
// the headers ({civic.key_id}, {civic.rate}, {civic.tier}) and only then
// calls graphql_guard, whose read of the body is what reads, checks and
// turns the JSON-RPC message into the GraphQL request (lazyCall). So a call
// over the rate costs no read and no decode of its body, and the call is
// charged once: there is no second limiter and no "already charged" mark.
// A body that fails its checks is answered with its JSON-RPC deferredRefusal in
// place of whatever the route made of the failed read.

// lazyCall is a modern call's GraphQL request body, made from the client's
// POST body on its first read.
type lazyCall struct {
	h    *Handler
	r    *http.Request // the client's POST
	name string        // Mcp-Name, decoded
	tool *tooldef.Tool

	mu   sync.Mutex // reverse_proxy may read on a goroutine of its own
	read bool       // decode ran
	done bool       // modernCall has the answer: nothing more is read
	c    modernCallMessage
	// refused, result: the answer when the call must not run (a deferredRefusal; a
	// bad argument's tool error), else gql is the GraphQL request.
	refused deferredRefusal
	result  *mcpsdk.CallToolResult
	gql     bytes.Reader
}

// errCallRefused is what the route reads from a call whose body failed its
// checks; civic_mcp answers the call's deferredRefusal instead of the route's answer.
var errCallRefused = errors.New("civic_mcp: the tools/call message was refused")

func (b *lazyCall) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.read && !b.done {
		b.decode()
	}
	if b.refused != nil || b.result != nil || !b.read {
		return 0, errCallRefused
	}
	return b.gql.Read(p)
}

func (b *lazyCall) Close() error { return nil }

// decode reads the POST's body with the checks every modern request gets
// (checkMessage, serveModern's head checks) and parseModernCall's, and
// builds the GraphQL request from the arguments (tool.Request).
func (b *lazyCall) decode() {
	b.read = true
	h := b.h
	body, refused := h.checkBody(b.r)
	if refused != nil {
		b.refused = refused
		return
	}
	// One decode reads the head and the call together (every well-formed
	// call); anything else is read as before, the head first.
	head, c, rpcErr, parsed := parseModernMessage(body)
	if !parsed {
		if head, refused = h.checkHead(body); refused != nil {
			b.refused = refused
			return
		}
	}
	switch {
	case len(head.ID) == 0 || string(head.ID) == "null":
		if head.Method != "" && head.Method != methodToolCall {
			b.refused = h.refusing(refusedHeaderMismatch, http.StatusBadRequest, nil, codeHeaderMismatch,
				"Header mismatch: the Mcp-Method header does not match the body's method")
			return
		}
		b.refused = accepted // 2026-07-28 defines no notification a client sends over HTTP
		return
	case head.Method != methodToolCall:
		b.refused = h.refusing(refusedHeaderMismatch, http.StatusBadRequest, head.ID, codeHeaderMismatch,
			"Header mismatch: the Mcp-Method header does not match the body's method")
		return
	}
	if !parsed {
		c, rpcErr = parseModernCall(body)
	}
	b.c = c
	if rpcErr != nil {
		b.refused = func(w http.ResponseWriter) {
			h.metrics.refusals.WithLabelValues(refusedBadRequest).Inc()
			writeModernAnswer(w, http.StatusBadRequest, c.id, nil, rpcErr, nil)
		}
		return
	}
	switch {
	case c.version != versionModern:
		b.refused = h.refusing(refusedHeaderMismatch, http.StatusBadRequest, idJSON(c.id), codeHeaderMismatch,
			"Header mismatch: the MCP-Protocol-Version header does not match _meta's "+metaVersion)
		return
	case c.name != b.name:
		b.refused = h.refusing(refusedHeaderMismatch, http.StatusBadRequest, idJSON(c.id), codeHeaderMismatch,
			"Header mismatch: the Mcp-Name header does not match the body's params.name")
		return
	}
	gql, err := b.tool.Request(c.arguments)
	if err != nil { // *tooldef.ArgumentError: the route gets no request
		h.metrics.calls.WithLabelValues(callBadArguments).Inc()
		b.result = toolError(err.Error())
		return
	}
	b.gql.Reset(gql) // tool.Request's own bytes: nothing else holds them
}

// idJSON is a parsed call's id as JSON (for a refusal that names it).
func idJSON(id jsonrpc.ID) json.RawMessage {
	b, _ := json.Marshal(id.Raw())
	return b
}

// accepted answers a notification.
func accepted(w http.ResponseWriter) { w.WriteHeader(http.StatusAccepted) }

// modernCall answers a modern tools/call of tool (the manifest's tool
// Mcp-Name names, in the tier of families): its GraphQL request through the
// route with the unread message as its body (lazyCall), then the answer —
// the route's 429 before the body was read as a deferredRefusal without an id, a
// deferredRefusal of the message, or the call's result.
func (h *Handler) modernCall(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, name string, tool *tooldef.Tool, families string) {
	b := &lazyCall{h: h, r: r, name: name, tool: tool}
	live := &liveCall{r: r, next: next}
	live.ctx, live.cancel = context.WithCancel(r.Context())
	defer live.cancel()
	a := h.forwardBody(live, b, -1)
	b.mu.Lock()
	read := b.read
	b.done = true
	b.mu.Unlock()
	if !read && a.status == http.StatusTooManyRequests {
		h.metrics.calls.WithLabelValues(callRateLimited).Inc()
		h.metrics.refusals.WithLabelValues(refusedRateLimited).Inc()
		writeRateLimited(w, a.header, a.body, nil, codeModernRateLimited)
		return
	}
	if !read { // the route answered without reading: the message is still checked
		b.mu.Lock()
		b.decode()
		b.mu.Unlock()
	}
	switch {
	case b.refused != nil:
		b.refused(w)
		return
	case b.result != nil:
		writeModernAnswer(w, http.StatusOK, b.c.id, b.result, nil, h.impl)
		return
	}
	outcome, res, callErr := render(a)
	h.metrics.calls.WithLabelValues(outcome).Inc()
	var e *jsonrpc.Error
	if errors.As(callErr, &e) && e.Code == codeNotEntitled {
		e.Code = codeModernNotEntitled // the guard's 403 naming the families lacked
	}
	writeModernAnswer(w, http.StatusOK, b.c.id, res, callErr, h.impl)
}

// unknownToolCall answers a modern tools/call of a name no tool of the
// manifest has (its message unit taken, its body read by serveModern).
func (h *Handler) unknownToolCall(w http.ResponseWriter, body []byte, name string) {
	c, rpcErr := parseModernCall(body)
	if rpcErr != nil {
		h.metrics.refusals.WithLabelValues(refusedBadRequest).Inc()
		writeModernAnswer(w, http.StatusBadRequest, c.id, nil, rpcErr, nil)
		return
	}
	switch {
	case c.version != versionModern:
		h.refuseMismatch(w, idJSON(c.id), "the MCP-Protocol-Version header does not match _meta's "+metaVersion)
	case c.name != name:
		h.refuseMismatch(w, idJSON(c.id), "the Mcp-Name header does not match the body's params.name")
	default:
		writeModernAnswer(w, http.StatusOK, c.id, nil, &jsonrpc.Error{Code: codeInvalidParams, Message: "unknown tool"}, nil)
	}
}

// writeRateLimited answers a message civic_rate_limit refused (hdr and body
// its answer's): 429 with Retry-After and the RateLimit headers, a JSON-RPC
// error (code: the era's) whose data holds what a rate-limited tool call's
// _meta holds.
func writeRateLimited(w http.ResponseWriter, hdr http.Header, body []byte, id json.RawMessage, code int) {
	for _, name := range [...]string{"Retry-After", "Ratelimit", "Ratelimit-Policy"} {
		if v := hdr[name]; len(v) > 0 {
			w.Header()[name] = v
		}
	}
	retryAfter := hdr.Get("Retry-After")
	data := map[string]any{"rateLimit": hdr.Get("RateLimit"), "rateLimitPolicy": hdr.Get("RateLimit-Policy")}
	if secs, err := strconv.Atoi(strings.TrimSpace(retryAfter)); err == nil {
		data["retryAfter"] = secs
	}
	writeRPCErrorData(w, http.StatusTooManyRequests, id, code, rateLimitedText(body, retryAfter), data)
}

var _ io.ReadCloser = (*lazyCall)(nil)
