package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/mcp/tooldef"
)

// The message rate (docs/design.md D65): every POSTed message but a
// tools/call request — initialize, tools/list, ping, notifications,
// resources/*, a method no server answers — takes one unit of a per-key
// rate of its own, message_rate. A tools/call is one request of the key's
// API rate already (its GraphQL request goes through civic_rate_limit);
// the other messages cost the gateway CPU (the SDK decodes and answers
// them) and took nothing, so a free key could spend it without bound.
//
// The rate is kept by civic_rate_limit itself: a handler of that module,
// loaded by its id with this rate, decides each message through the same
// limiter and store as the API (the civic_rate_limit app: Redis shared by
// the instances, its leases, its fail-open/closed mode), under a policy of
// its own, so the message budget and the API budget are separate buckets.

// defaultMessageRate is message_rate's default (docs/mcp.md "Serving the
// tools"): ten messages a second, sustained, per key.
const defaultMessageRate = "600/m"

// messagePolicy is the message rate's policy name (store key and RateLimit
// headers).
const messagePolicy = "mcp_messages"

// messageKeyPlaceholder carries the caller's key id to the message rate's
// handler, in a replacer of its own: not civic.key_id, so that
// civic_rate_limit's usage counting (API requests, D28) leaves the
// messages out.
const messageKeyPlaceholder = "civic_mcp.key_id"

// provisionMessageRate checks MessageRate and loads the civic_rate_limit
// handler that keeps it.
func (h *Handler) provisionMessageRate(ctx caddy.Context) error {
	h.MessageRate = cmp.Or(h.MessageRate, defaultMessageRate)
	if _, err := contract.ParseRates(h.MessageRate); err != nil {
		return fmt.Errorf("civic_mcp: message_rate: %w", err)
	}
	cfg, err := json.Marshal(map[string]string{
		"key": "{" + messageKeyPlaceholder + "}", "rate": h.MessageRate, "policy": messagePolicy})
	if err != nil {
		return fmt.Errorf("civic_mcp: message_rate: %w", err)
	}
	mod, err := ctx.LoadModuleByID("http.handlers.civic_rate_limit", cfg)
	if err != nil {
		return fmt.Errorf("civic_mcp: message_rate needs civic_rate_limit: %w", err)
	}
	limit, ok := mod.(caddyhttp.MiddlewareHandler)
	if !ok {
		return fmt.Errorf("civic_mcp: message_rate: civic_rate_limit is a %T", mod)
	}
	h.messages = limit
	return nil
}

// isToolCall reports whether head is a tools/call request: the API rate's
// to charge, through its GraphQL request. A tools/call without an id is a
// message like any other (the SDK refuses it).
func isToolCall(head rpcHead) bool {
	return head.Method == methodToolCall && len(head.ID) > 0 && string(head.ID) != "null"
}

// admitMessage takes one unit of the caller's message rate for the message
// with id, or answers why not: 429 with Retry-After and the RateLimit
// headers, a JSON-RPC error (code: the era's) whose data holds what a
// rate-limited tool call's _meta holds; whatever else civic_rate_limit
// answered (a store down in closed mode: 500), as it answered it.
func (h *Handler) admitMessage(w http.ResponseWriter, r *http.Request, id json.RawMessage, caller *contract.Caller, code int) bool {
	repl := caddy.NewReplacer()
	repl.Set(messageKeyPlaceholder, caller.KeyID)
	rec := &decisionRecorder{header: make(http.Header, 4)}
	admitted := false
	err := h.messages.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl)),
		caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
			admitted = true
			return nil
		}))
	if admitted && err == nil {
		return true
	}
	h.metrics.refusals.WithLabelValues(refusedMessageRate).Inc()
	if rec.status != http.StatusTooManyRequests {
		contract.WriteJSON(w, http.StatusInternalServerError, contract.BodyInternal)
		return false
	}
	writeRateLimited(w, rec.header, rec.body, id, code)
	return false
}

// rateLimitedText is what a rate-limited tool call says
// (tooldef.Result): "Rate limit exceeded (HTTP 429; retry after <s> s)".
func rateLimitedText(body []byte, retryAfter string) string {
	res := tooldef.Result(http.StatusTooManyRequests, body, retryAfter)
	if len(res.Content) == 1 {
		if t, ok := res.Content[0].(*mcpsdk.TextContent); ok {
			return t.Text
		}
	}
	return "Rate limit exceeded"
}

// decisionRecorder keeps what civic_rate_limit answered a message it
// refused.
type decisionRecorder struct {
	header http.Header
	status int
	body   []byte
}

func (d *decisionRecorder) Header() http.Header { return d.header }

func (d *decisionRecorder) WriteHeader(status int) {
	if d.status == 0 {
		d.status = status
	}
}

func (d *decisionRecorder) Write(p []byte) (int, error) {
	if d.status == 0 {
		d.status = http.StatusOK
	}
	if len(d.body) < 1<<10 { // a refusal's body is a line of JSON
		d.body = append(d.body, p...)
	}
	return len(p), nil
}
