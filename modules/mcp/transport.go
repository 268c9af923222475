package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/civicgate/civicgate/modules/contract"
)

// What civic_mcp checks before the SDK sees a request, so that each refusal
// it can make has a JSON body (docs/design.md D10): the SDK's own are plain
// text. MCP-level refusals are JSON-RPC error responses, which MCP clients
// read; the others are the gateway's {"error":…} / {"errors":[…]} bodies.

const (
	sessionHeader  = "Mcp-Session-Id"
	versionHeader  = "Mcp-Protocol-Version"
	methodInit     = "initialize"
	methodToolCall = "tools/call"
	// methodCancelled may name a call civic_mcp answers (fastcall.go).
	methodCancelled = "notifications/cancelled"
)

// JSON-RPC error codes of civic_mcp's refusals, in the implementation's
// range -32000…-32099 and clear of the codes the go-sdk's jsonrpc2 gives a
// meaning (-32001…-32005: a client reads -32003 as its own closing, -32004
// as the server's) and MCP's (-32002, -32020…-32022, -32042). -32001 for an
// unknown session is what the TypeScript SDK's servers answer (the go-sdk's
// "unknown error": nothing a client acts on).
const (
	codeInvalidRequest  = -32600
	codeMethodNotFound  = -32601
	codeParseError      = -32700
	codeBadRequest      = -32000
	codeSessionNotFound = -32001
	codeNotEntitled     = -32030
	codeTooManySessions = -32031
	codeRateLimited     = -32032 // a message over message_rate (messagerate.go)
)

// supportedVersions are the protocol revisions served (docs/mcp.md).
var supportedVersions = []string{"2025-11-25", "2025-06-18"}

// serverMethods are the requests an MCP server answers (the go-sdk's
// server methods, revision 2025-11-25); any other request is -32601 here.
var serverMethods = map[string]bool{
	"initialize": true, "ping": true, "tools/list": true, "tools/call": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"resources/subscribe": true, "resources/unsubscribe": true, "prompts/list": true, "prompts/get": true,
	"completion/complete": true, "logging/setLevel": true,
}

// rpcError is a JSON-RPC error response.
type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	} `json:"error"`
}

var null = json.RawMessage("null")

// writeRPCError answers status with a JSON-RPC error response to the
// message with id (nil: null).
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	writeRPCErrorData(w, status, id, code, msg, nil)
}

// writeRPCErrorData is writeRPCError with the error's data member (nil:
// none).
func writeRPCErrorData(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string, data any) {
	e := rpcError{JSONRPC: "2.0", ID: id}
	if len(e.ID) == 0 && !modernCode(code) {
		e.ID = null // JSON-RPC 2.0; 2026-07-28's errors leave an unknown id out
	}
	e.Error.Code, e.Error.Message, e.Error.Data = code, msg, data
	body, err := json.Marshal(&e)
	if err != nil { // an id that is not JSON cannot reach here (parsed before)
		body = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}`)
	}
	contract.WriteJSON(w, status, body)
}

// refuse counts a refusal and answers it as a JSON-RPC error.
func (h *Handler) refuse(w http.ResponseWriter, reason string, status int, id json.RawMessage, code int, msg string) {
	h.metrics.refusals.WithLabelValues(reason).Inc()
	writeRPCError(w, status, id, code, msg)
}

// checkHeaders refuses a request the SDK would refuse for its headers.
func (h *Handler) checkHeaders(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodPost {
		// "application/json" as sent is what the parse would accept; only
		// another spelling is parsed (its map of parameters allocates).
		if ct := r.Header["Content-Type"]; (len(ct) == 0 || ct[0] != "application/json") && !jsonMediaType(r.Header.Get("Content-Type")) {
			h.refuse(w, refusedBadRequest, http.StatusUnsupportedMediaType, nil, codeBadRequest, "Content-Type must be application/json")
			return false
		}
	}
	if r.Method != http.MethodDelete {
		json, stream := accepts(r.Header["Accept"])
		if !stream || (r.Method == http.MethodPost && !json) {
			msg := "Accept must list application/json and text/event-stream"
			if r.Method == http.MethodGet {
				msg = "Accept must list text/event-stream"
			}
			h.refuse(w, refusedBadRequest, http.StatusNotAcceptable, nil, codeBadRequest, msg)
			return false
		}
	}
	if v := r.Header.Get(versionHeader); v != "" && !slices.Contains(allVersions, v) {
		// As 2026-07-28 specifies (a modern client reads the supported
		// versions from it; a 2025 one sees a 400, as before), with the
		// id of the request when its body, read within max_message, has
		// one: every error response carries the id of the request it
		// answers (docs/design.md D85).
		var id json.RawMessage
		if body, err := readBody(r, h.MaxMessage); err == nil && r.Method == http.MethodPost {
			if head, err := readHead(body); err == nil && string(head.ID) != "null" {
				id = head.ID
			}
		}
		h.refuseUnsupportedVersion(w, id, truncate(v, maxHeaderValue))
		return false
	}
	return true
}

// jsonMediaType reports whether a Content-Type is application/json.
func jsonMediaType(v string) bool {
	ct, _, err := mime.ParseMediaType(v)
	return err == nil && ct == "application/json"
}

// truncate cuts s to at most n bytes (a value echoed to its sender).
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// accepts reads Accept as the SDK does (streamableAccepts).
func accepts(values []string) (json, stream bool) {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") { // as strings.Split, without its slice
			base, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				json = true
			case "text/event-stream", "text/*":
				stream = true
			case "*/*":
				json, stream = true, true
			}
		}
	}
	return json, stream
}

// readBody reads a POST body of at most max bytes.
func readBody(r *http.Request, max int64) ([]byte, error) {
	if r.ContentLength > max {
		return nil, errTooLarge
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > max {
		return nil, errTooLarge
	}
	return body, nil
}

var errTooLarge = errors.New("too large")

// servePOST checks a POST and hands it to the SDK: an initialize opens a
// session (sessions.go), any other message must name a session of the
// caller's key.
func (h *Handler) servePOST(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, q *contract.Request, caller *contract.Caller) {
	if !h.checkHeaders(w, r) {
		return
	}
	if r.Header.Get(versionHeader) == versionModern {
		h.serveModern(w, r, next, q, caller)
		return
	}
	// 2025-06-18 removed JSON-RPC batching; both revisions served refuse it.
	body, head, ok := h.readMessage(w, r)
	if !ok {
		return
	}
	if claimsModern(body) {
		// _meta names a revision the header does not: the header decides the
		// era, so the body must agree with it (2026-07-28 "Server Validation").
		h.refuseMismatch(w, head.ID, "the MCP-Protocol-Version header does not match _meta's "+metaVersion)
		return
	}
	if !isToolCall(head) && !h.admitMessage(w, r, head.ID, caller, codeRateLimited) {
		return
	}
	if len(head.ID) > 0 && head.Method != "" && !serverMethods[head.Method] {
		// The SDK would answer a plain-text 400 before revision 2026-07-28.
		h.refuse(w, refusedBadRequest, http.StatusOK, head.ID, codeMethodNotFound, "Method not found")
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	sid := r.Header.Get(sessionHeader)
	if sid == "" {
		if head.Method != methodInit {
			h.refuse(w, refusedBadRequest, http.StatusBadRequest, head.ID, codeBadRequest, "Mcp-Session-Id header is required: send initialize first")
			return
		}
		h.initialize(w, r, head.ID, q, caller)
		return
	}
	s := h.sessions.lookup(sid, caller.KeyID)
	if s == nil || !s.begin() {
		h.refuse(w, refusedUnknownSession, http.StatusNotFound, head.ID, codeSessionNotFound, "Session not found")
		return
	}
	defer s.finish()
	h.syncTools(s, caller)
	if head.Method == methodToolCall && h.answerCall(w, r, next, s, body) {
		return
	}
	if head.Method == methodCancelled {
		s.cancelNamed(body)
	}
	sr := r.WithContext(context.WithValue(r.Context(), sessionKey{}, s))
	if head.Method != methodToolCall {
		h.sdk.ServeHTTP(w, sr)
		return
	}
	live := s.register(r, next, jsonrpc.ID{})
	defer s.unregister(live)
	r.Header[callHeader] = []string{live.id}
	h.serveCall(w, sr, live)
}

// claimsModern reports whether a message's params._meta names a protocol
// version (only 2026-07-28 and later requests carry one). The member is
// looked for as written first, so that a 2025 message pays nothing.
func claimsModern(body []byte) bool {
	if !bytes.Contains(body, []byte("protocolVersion")) {
		return false
	}
	var msg struct {
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return false
	}
	_, ok := msg.Params.Meta[metaVersion]
	return ok
}

// initialize opens a session for caller (within the caps) and lets the SDK
// answer the initialize.
func (h *Handler) initialize(w http.ResponseWriter, r *http.Request, id json.RawMessage, q *contract.Request, caller *contract.Caller) {
	s, refusal := h.sessions.open(caller, q)
	if refusal != nil {
		w.Header()["Retry-After"] = []string{strconv.Itoa(refusal.retryAfter)}
		h.refuse(w, refusal.reason, refusal.status, id, codeTooManySessions, refusal.message)
		return
	}
	s.begin()
	defer s.finish()
	// The SDK keeps the context of the request that opened a session for
	// the session's life (its tool handlers run in it): give it one that
	// holds only the session and follows this request's cancellation while
	// it lasts, not the Caddy request with its replacer and variables.
	ctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(r.Context(), cancel)
	h.sdk.ServeHTTP(w, r.WithContext(context.WithValue(ctx, sessionKey{}, s)))
	stop()
	cancel()
	if !s.initialized() {
		h.sessions.end(s, endFailed)
	}
}

// serveGET hands the standalone event stream of a session of the caller's
// key to the SDK, each write under its own deadline (stream.go).
func (h *Handler) serveGET(w http.ResponseWriter, r *http.Request, caller *contract.Caller) {
	if !h.checkHeaders(w, r) {
		return
	}
	s := h.sessionOf(w, r, caller)
	if s == nil {
		return
	}
	h.sdk.ServeHTTP(newStreamWriter(w), r.WithContext(context.WithValue(r.Context(), sessionKey{}, s)))
}

// serveDELETE ends a session of the caller's key.
func (h *Handler) serveDELETE(w http.ResponseWriter, r *http.Request, caller *contract.Caller) {
	if !h.checkHeaders(w, r) {
		return
	}
	s := h.sessionOf(w, r, caller)
	if s == nil {
		return
	}
	h.sessions.end(s, endDeleted)
	w.WriteHeader(http.StatusNoContent)
}

// sessionOf returns the session a GET or DELETE names, or answers why not.
func (h *Handler) sessionOf(w http.ResponseWriter, r *http.Request, caller *contract.Caller) *session {
	sid := r.Header.Get(sessionHeader)
	if sid == "" {
		h.refuse(w, refusedBadRequest, http.StatusBadRequest, nil, codeBadRequest, "Mcp-Session-Id header is required")
		return nil
	}
	s := h.sessions.lookup(sid, caller.KeyID)
	if s == nil {
		h.refuse(w, refusedUnknownSession, http.StatusNotFound, nil, codeSessionNotFound, "Session not found")
	}
	return s
}
