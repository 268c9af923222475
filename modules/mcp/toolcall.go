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

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/mcp/tooldef"
)

// A tools/call runs as a GraphQL POST through the rest of the route (next:
// rate limit, guard, cache, upstream), on behalf of the caller of the HTTP
// request the call arrived on. The SDK runs tool handlers in the session's
// context (the initialize's), with only the call's headers in
// req.Extra.Header, so every tools/call POST is registered with its session
// under a call id put in callHeader; the handler finds the live request
// there. A client cannot name a call: civic_auth removes client-sent
// X-Civic-* headers and ServeHTTP removes this one again; and a handler
// looks only among its own session's calls (same key).

// callHeader carries a tools/call POST's call id to its tool handler.
const callHeader = "X-Civic-Mcp-Call"

// liveCall is a tools/call POST in progress. Its tool handler, which the
// SDK runs on a goroutine of its own, hands the GraphQL request to the
// POST's goroutine (jobs): that goroutine owns the request (Caddy reuses
// what it holds once ServeHTTP returns), and its stack has already grown
// through the chain, where a fresh goroutine would grow and copy its stack
// on every call.
type liveCall struct {
	id     string
	rpcID  jsonrpc.ID // set when civic_mcp answers the call itself
	r      *http.Request
	next   caddyhttp.Handler
	ctx    context.Context // r's, canceled when the POST or the session ends
	cancel context.CancelFunc
	jobs   chan *job
}

// job is one GraphQL request of a tool call, run by the POST's goroutine.
type job struct {
	body  []byte
	ans   answer
	ready chan struct{}
}

// register records a tools/call POST of the session; rpcID is the call's
// JSON-RPC id when civic_mcp answers it (fastcall.go), the zero ID when the
// SDK does. It returns nil for an id already in flight in the session.
func (s *session) register(r *http.Request, next caddyhttp.Handler, rpcID jsonrpc.ID) *liveCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rpcID.IsValid() {
		for _, c := range s.calls {
			if c.rpcID == rpcID {
				return nil
			}
		}
	}
	c := &liveCall{r: r, next: next, rpcID: rpcID, jobs: make(chan *job)}
	c.ctx, c.cancel = context.WithCancel(r.Context())
	s.seq++
	c.id = strconv.FormatUint(s.seq, 36)
	s.calls[c.id] = c
	if s.ended {
		c.cancel()
	}
	return c
}

// unregister forgets a POST once the SDK answered it; a handler still
// offering a job sees the call's context canceled.
func (s *session) unregister(c *liveCall) {
	s.mu.Lock()
	delete(s.calls, c.id)
	s.mu.Unlock()
	c.cancel()
}

// lookupCall returns the live call id names.
func (s *session) lookupCall(id string) *liveCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[id]
}

// serveCall lets the SDK answer a tools/call POST on another goroutine
// while this one runs the GraphQL requests its tool handler hands over.
func (h *Handler) serveCall(w http.ResponseWriter, r *http.Request, live *liveCall) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Off Caddy's goroutine, Caddy's recovery does not reach: a panic
		// would end the process. Nothing of it is logged but the fact.
		defer func() {
			if recover() != nil {
				h.logger.Error("the MCP SDK panicked answering a tools/call")
			}
		}()
		h.sdk.ServeHTTP(w, r)
	}()
	for {
		select {
		case j := <-live.jobs:
			j.ans = h.forward(live, j.body)
			close(j.ready)
		case <-done:
			return
		}
	}
}

// run has the POST's goroutine forward body, or reports that the POST
// ended first.
func (c *liveCall) run(body []byte) answer {
	j := &job{body: body, ready: make(chan struct{})}
	select {
	case c.jobs <- j:
	case <-c.ctx.Done():
		return answer{canceled: true}
	}
	<-j.ready
	return j.ans
}

// newServer is the SDK server of one session: the tools of its families,
// and the entitlement check of tools/call before the SDK's own lookup.
func (h *Handler) newServer(s *session) *mcpsdk.Server {
	id := s.id
	srv := mcpsdk.NewServer(h.impl, &mcpsdk.ServerOptions{
		GetSessionID:              func() string { return id },
		SupportedProtocolVersions: supportedVersions,
		Capabilities:              &mcpsdk.ServerCapabilities{Tools: &mcpsdk.ToolCapabilities{ListChanged: true}},
		SetCacheable:              setCacheable, // a tier's list is private (modern.go)
	})
	srv.AddReceivingMiddleware(h.entitlement(s))
	for _, t := range h.tools.For(s.csv) {
		tool, _ := h.tools.Lookup(t.Name)
		srv.AddTool(t, h.toolHandler(s, tool))
	}
	return srv
}

// entitlement answers a tools/call of a tool of the manifest that the
// session's tier lacks with the words of the HTTP 403
// (contract.MsgNotEntitled), where the SDK would say "unknown tool".
func (h *Handler) entitlement(s *session) mcpsdk.Middleware {
	return func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if method == methodToolCall {
				if p, ok := req.GetParams().(*mcpsdk.CallToolParamsRaw); ok {
					if t, known := h.tools.Lookup(p.Name); known {
						if err := h.outsideTier(s.tierFamilies(), t); err != nil {
							return nil, err
						}
					}
				}
			}
			return next(ctx, method, req)
		}
	}
}

// outsideTier is the JSON-RPC error of a call of tool t when the tier of
// families (comma-separated) lacks its family (counted), or nil.
func (h *Handler) outsideTier(families string, t *tooldef.Tool) error {
	if t.Entitled(families) {
		return nil
	}
	h.metrics.calls.WithLabelValues(callNotEntitled).Inc()
	return notEntitled(t.Family)
}

// notEntitled is the JSON-RPC error of a call outside the tier, its data
// naming the families lacked (what Civic-Refused-Family says on HTTP).
func notEntitled(families string) error {
	data, _ := json.Marshal(map[string]string{"refusedFamily": families})
	return &jsonrpc.Error{Code: codeNotEntitled, Message: contract.MsgNotEntitled, Data: data}
}

// toolHandler is the SDK handler of tool in session s.
func (h *Handler) toolHandler(s *session, tool *tooldef.Tool) mcpsdk.ToolHandler {
	return func(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
		return h.call(ctx, s, tool, req)
	}
}

// call checks the arguments, runs the tool's GraphQL request through the
// chain on the live request's behalf, and renders the answer.
func (h *Handler) call(ctx context.Context, s *session, tool *tooldef.Tool, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	var id string
	if req.Extra != nil {
		id = req.Extra.Header.Get(callHeader)
	}
	live := s.lookupCall(id)
	if live == nil {
		h.metrics.calls.WithLabelValues(callCanceled).Inc()
		return toolError("The HTTP request of this call ended before the call ran."), nil
	}
	// notifications/cancelled cancels ctx: cancel the GraphQL request too.
	stop := context.AfterFunc(ctx, live.cancel)
	defer stop()
	return h.runTool(tool, req.Params.Arguments, live.run)
}

// runTool checks the arguments of a call of tool, has send run its GraphQL
// request and renders the answer, counting the outcome: a call of a tool
// the tier has, on either path (the SDK's handler, fastcall.go).
func (h *Handler) runTool(tool *tooldef.Tool, arguments json.RawMessage, send func([]byte) answer) (*mcpsdk.CallToolResult, error) {
	body, err := tool.Request(arguments)
	if err != nil { // *tooldef.ArgumentError: nothing is sent
		h.metrics.calls.WithLabelValues(callBadArguments).Inc()
		return toolError(err.Error()), nil
	}
	outcome, res, rpcErr := render(send(body))
	h.metrics.calls.WithLabelValues(outcome).Inc()
	return res, rpcErr
}

// answer is what the chain answered a tool's GraphQL request.
type answer struct {
	status   int
	header   http.Header
	body     []byte
	tooLarge bool
	canceled bool
}

// forward runs the GraphQL POST body through next as live's caller: the
// same credential in a fresh request value (contract.Request.Derive) marked
// as an MCP call, the
// live request's headers but its MCP ones, its URL and context.
func (h *Handler) forward(live *liveCall, body []byte) answer {
	return h.forwardBody(live, io.NopCloser(bytes.NewReader(body)), int64(len(body)))
}

// forwardBody is forward of a body of n bytes (-1: not known until read).
func (h *Handler) forwardBody(live *liveCall, body io.ReadCloser, n int64) answer {
	var d contract.Request
	if q, ok := contract.RequestFrom(live.ctx); ok {
		d = q.Derive()
	}
	d.SetTransport(contract.TransportMCP) // usage counts it in mcp_calls (docs/design.md D45)
	ctx := contract.WithRequest(live.ctx, d)
	sub := live.r.WithContext(ctx)
	u := *live.r.URL
	sub.URL = &u
	sub.Method = http.MethodPost
	sub.Header = subrequestHeader(live.r.Header)
	sub.Body = body
	sub.ContentLength = n
	sub.GetBody = nil
	sub.TransferEncoding = nil
	sub.Trailer = nil
	rec := &capture{header: make(http.Header, 8), limit: int(h.MaxMessage)}
	err := live.next.ServeHTTP(rec, sub)
	if live.ctx.Err() != nil {
		// Whatever the chain made of it: reverse_proxy records 499 and
		// returns no error when its request is canceled.
		return answer{canceled: true}
	}
	a := answer{status: rec.status, header: rec.header, body: rec.body, tooLarge: rec.over}
	if err != nil && !rec.over {
		status := http.StatusInternalServerError
		var he caddyhttp.HandlerError
		if errors.As(err, &he) && he.StatusCode >= 400 {
			status = he.StatusCode
		}
		h.logger.Warn("a tool call's GraphQL request failed", zap.Int("status", status), zap.Error(err))
		a.status, a.body = status, errorBodyFor(status)
	}
	if a.status == 0 {
		a.status = http.StatusOK
	}
	return a
}

// errorBodyFor is the gateway's body for a handler error's status, as
// handle_errors in caddyfile/routes.caddy writes them.
func errorBodyFor(status int) []byte {
	switch status {
	case http.StatusBadGateway:
		return contract.BodyBadGateway
	case http.StatusGatewayTimeout:
		return contract.BodyGatewayTimeout
	}
	return contract.BodyInternal
}

// render turns an answer into the call's result, or its JSON-RPC error
// (a family the tier lacks), and names the outcome.
func render(a answer) (string, *mcpsdk.CallToolResult, error) {
	switch {
	case a.canceled:
		return callCanceled, toolError("The call was canceled."), nil
	case a.tooLarge:
		return callTooLarge, toolError("The GraphQL answer is larger than one tool result may be; ask for less (a smaller page)."), nil
	case a.status == http.StatusForbidden && a.header.Get(contract.HeaderRefusedFamily) != "":
		return callNotEntitled, nil, notEntitled(a.header.Get(contract.HeaderRefusedFamily))
	}
	res := tooldef.Result(a.status, a.body, a.header.Get("Retry-After"))
	switch {
	case a.status == http.StatusTooManyRequests:
		meta := mcpsdk.Meta{"rateLimit": a.header.Get("RateLimit"), "rateLimitPolicy": a.header.Get("RateLimit-Policy")}
		if secs, err := strconv.Atoi(strings.TrimSpace(a.header.Get("Retry-After"))); err == nil {
			meta["retryAfter"] = secs
		}
		res.Meta = meta
		return callRateLimited, res, nil
	case !res.IsError:
		return callOK, res, nil
	case a.status >= 500 || a.status < 400 && a.status != http.StatusOK:
		return callUpstreamError, res, nil
	case a.status == http.StatusOK:
		if bytes.Contains(a.body, []byte(`"errors"`)) {
			return callGraphQLError, res, nil
		}
		return callUpstreamError, res, nil
	}
	return callRefused, res, nil
}

func toolError(text string) *mcpsdk.CallToolResult {
	return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: text}}, IsError: true}
}

// Shared header values of the GraphQL request (read-only, capacity 1).
var jsonValue = []string{"application/json"}

// subrequestHeader is the live request's header without what belongs to
// the MCP exchange (Mcp-*, the call id), its body (Content-*, Accept*,
// conditionals, ranges), with JSON in and out. Values are shared with the
// live request at capacity = length, so an Add copies.
func subrequestHeader(src http.Header) http.Header {
	h := make(http.Header, len(src)+2)
	for k, v := range src {
		if dropped(k) {
			continue
		}
		h[k] = v[:len(v):len(v)]
	}
	h["Content-Type"] = jsonValue
	h["Accept"] = jsonValue
	return h
}

func dropped(k string) bool {
	switch k {
	case "Content-Length", "Content-Type", "Content-Encoding", "Accept", "Accept-Encoding", "Transfer-Encoding",
		"Last-Event-Id", "Range", "Expect", "Origin", callHeader:
		return true
	}
	return strings.HasPrefix(k, "Mcp-") || strings.HasPrefix(k, "If-")
}

// capture is the bounded in-memory ResponseWriter of a tool's GraphQL
// request: past limit bytes it refuses the write (the proxy stops
// copying) and remembers it.
type capture struct {
	header http.Header
	status int
	body   []byte
	limit  int
	over   bool
}

var errAnswerTooLarge = errors.New("civic_mcp: the GraphQL answer exceeds max_message")

func (c *capture) Header() http.Header { return c.header }

func (c *capture) WriteHeader(status int) {
	if c.status == 0 && status >= 200 {
		c.status = status
	}
}

func (c *capture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	if c.over || len(c.body)+len(p) > c.limit {
		c.over = true
		return 0, errAnswerTooLarge
	}
	c.body = append(c.body, p...)
	return len(p), nil
}

// Flush is a no-op: the answer is read whole.
func (c *capture) Flush() {}
