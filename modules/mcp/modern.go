package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/civicgate/civicgate/modules/contract"
)

// The modern era (MCP revision 2026-07-28, docs/design.md D80): a POST whose
// MCP-Protocol-Version header is 2026-07-28 is served without a session, by
// any instance, from the request alone. What civic_mcp decides it decides
// from the standard headers before the body is read — the tier against the
// tool Mcp-Name names, the message rate for every other method — then checks
// that the body says what the headers said (-32020, HTTP 400). A tools/call
// is answered by civic_mcp itself (the steps of toolcall.go); server/discover
// and tools/list by the go-sdk's stateless handler, one server per tier,
// which writes resultType and the server's identity into each result.

const (
	versionModern = "2026-07-28"

	methodHeaderName = "Mcp-Method"
	nameHeaderName   = "Mcp-Name"

	methodDiscover = "server/discover"
	methodListen   = "subscriptions/listen"

	metaVersion      = "io.modelcontextprotocol/protocolVersion"
	metaCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo   = "io.modelcontextprotocol/clientInfo"
	metaServerInfo   = "io.modelcontextprotocol/serverInfo"

	// maxHeaderValue bounds Mcp-Method and Mcp-Name as sent (a tool name is
	// at most 128 characters; its Base64 form fits).
	maxHeaderValue = 512

	// listTTLMillis is tools/list's and server/discover's ttlMs: a tier
	// change reaches a client that caches the list within a minute.
	listTTLMillis = 60_000
)

// Codes of the modern era: the revision's own, and civic_mcp's outside the
// JSON-RPC reserved range (2026-07-28 reserves -32020…-32099 for the
// specification, where the 2025 era's -32030 and -32032 live).
const (
	codeInvalidParams      = -32602
	codeHeaderMismatch     = -32020
	codeUnsupportedVersion = -32022
	codeModernNotEntitled  = -31030
	codeModernRateLimited  = -31032
)

// modernCode reports whether code is one 2026-07-28 defines or one of
// civic_mcp's modern-era codes: their errors omit an id not known
// (2026-07-28's JSONRPCErrorResponse: "id?: RequestId", never null).
func modernCode(code int) bool {
	return code == codeHeaderMismatch || code == -32021 || code == codeUnsupportedVersion || code <= -31000 && code > -32000
}

// allVersions are the revisions /v1/mcp serves, newest first.
var allVersions = []string{versionModern, "2025-11-25", "2025-06-18"}

// removedMethods are the 2025 methods 2026-07-28 removed: a modern request
// naming one is answered 404 -32601 like any method the server lacks.
var removedMethods = map[string]bool{
	methodInit: true, "ping": true, "logging/setLevel": true, "resources/subscribe": true,
	"resources/unsubscribe": true, "notifications/initialized": true, "notifications/roots/list_changed": true,
}

// modernMethods are what the go-sdk's stateless server answers for a modern
// request: those of the capabilities server/discover declares (tools) and
// discovery itself. prompts/*, resources/* and completion/complete, which
// the SDK would answer with empty results though no capability declares
// them, are -32601 like any method the server lacks (docs/design.md D85).
// tools/call and subscriptions/listen are answered before.
var modernMethods = map[string]bool{methodDiscover: true, "tools/list": true}

// namedMethods carry Mcp-Name (params.name or params.uri).
var namedMethods = map[string]bool{methodToolCall: true, "resources/read": true, "prompts/get": true}

// headerValue returns the one value of a standard header: present reports
// whether it was sent at all, valid whether it is one value of at most
// maxHeaderValue visible ASCII characters.
func headerValue(h http.Header, name string) (v string, present, valid bool) {
	vs := h[name]
	if len(vs) == 0 {
		return "", false, false
	}
	if len(vs) != 1 || vs[0] == "" || len(vs[0]) > maxHeaderValue {
		return "", true, false
	}
	for i := 0; i < len(vs[0]); i++ {
		if c := vs[0][i]; c < 0x21 || c > 0x7e {
			return "", true, false
		}
	}
	return vs[0], true, true
}

// decodeName reads Mcp-Name: plain, or =?base64?…?= (the revision's
// sentinel for a name outside the header-safe characters).
func decodeName(v string) (string, bool) {
	enc, ok := strings.CutPrefix(v, "=?base64?")
	if !ok {
		return v, true
	}
	if enc, ok = strings.CutSuffix(enc, "?="); !ok {
		return v, true
	}
	b, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// refuseMismatch answers a request whose standard headers are missing,
// malformed or not what its body says: 400, HeaderMismatch.
func (h *Handler) refuseMismatch(w http.ResponseWriter, id json.RawMessage, msg string) {
	h.refuse(w, refusedHeaderMismatch, http.StatusBadRequest, id, codeHeaderMismatch, "Header mismatch: "+msg)
}

// refuseUnsupportedVersion answers an MCP-Protocol-Version /v1/mcp does not
// serve: 400, UnsupportedProtocolVersion listing the ones it does.
func (h *Handler) refuseUnsupportedVersion(w http.ResponseWriter, id json.RawMessage, requested string) {
	h.metrics.refusals.WithLabelValues(refusedVersion).Inc()
	writeRPCErrorData(w, http.StatusBadRequest, id, codeUnsupportedVersion, "Unsupported protocol version",
		map[string]any{"supported": allVersions, "requested": requested})
}

// serveModern serves a POST of revision 2026-07-28 (checkHeaders passed).
func (h *Handler) serveModern(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, q *contract.Request, caller *contract.Caller) {
	method, present, valid := headerValue(r.Header, methodHeaderName)
	if present && !valid {
		h.refuseMismatch(w, nil, "the Mcp-Method header is malformed")
		return
	}
	var name string
	if namedMethods[method] {
		raw, _, ok := headerValue(r.Header, nameHeaderName)
		if ok {
			name, ok = decodeName(raw)
		}
		if !ok {
			h.refuseMismatch(w, nil, "the Mcp-Name header is missing or malformed")
			return
		}
	}
	families := h.families.csv(caller.Families)
	h.listens.seen(caller.KeyID, families) // a tier change reaches the key's open streams (listen.go)
	if method == methodToolCall {
		// The tier is checked against the tool the header names before a
		// byte of the body is read: a call the tier lacks costs no parse.
		if t, known := h.tools.Lookup(name); known {
			if !t.Entitled(families) {
				h.metrics.refusals.WithLabelValues(refusedNotEntitled).Inc()
				h.metrics.calls.WithLabelValues(callNotEntitled).Inc()
				refusal := notEntitledRefusal(t.Family)
				w.Header()[contract.HeaderRefusedFamily] = refusal.family
				sharedWriter.Write(w, http.StatusForbidden, refusal.body)
				return
			}
			// The API rate is charged from the headers by civic_rate_limit
			// itself, on the call's GraphQL request, before the body is
			// read (moderncall.go).
			h.modernCall(w, r, next, name, t, families)
			return
		}
	}
	// Every other message, a call of a name no tool has too, takes its
	// unit of the message rate before its body is read.
	if !h.admitMessage(w, r, nil, caller, codeModernRateLimited) {
		return
	}
	body, head, ok := h.readMessage(w, r)
	if !ok {
		return
	}
	switch {
	case len(head.ID) == 0 || string(head.ID) == "null":
		if head.Method != "" && method != "" && head.Method != method {
			h.refuseMismatch(w, nil, "the Mcp-Method header does not match the body's method")
			return
		}
		// 2026-07-28 defines no notification a client sends over HTTP.
		w.WriteHeader(http.StatusAccepted)
		return
	case method == "":
		h.refuseMismatch(w, head.ID, "missing required Mcp-Method header")
		return
	case head.Method != method:
		h.refuseMismatch(w, head.ID, "the Mcp-Method header does not match the body's method")
		return
	case method == methodToolCall: // a name no tool has (modernCall takes the others)
		h.unknownToolCall(w, body, name)
		return
	case removedMethods[method]:
		h.refuse(w, refusedBadRequest, http.StatusNotFound, head.ID, codeMethodNotFound,
			"Method not found: "+method+" was removed in MCP 2026-07-28")
		return
	case method == methodListen:
		h.serveListen(w, r, q, caller, body, listenID(head.ID), families)
		return
	case !modernMethods[method]:
		h.refuse(w, refusedBadRequest, http.StatusNotFound, head.ID, codeMethodNotFound, "Method not found")
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	h.stateless.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tierKey{}, h.tierServer(families))))
}

// headerRefusal is the modern refusal of a call of a tool of one family from
// the headers, made once per family: the refusal from the headers is the
// cheap path (docs/design.md D84).
type headerRefusal struct {
	body   []byte
	family []string // Civic-Refused-Family's value: shared, capacity 1
}

// notEntitledRefusal is the modern refusal of a call of a tool of family.
func notEntitledRefusal(family string) *headerRefusal {
	if v, ok := notEntitledRefusals.Load(family); ok {
		return v.(*headerRefusal)
	}
	e := rpcError{JSONRPC: "2.0"} // no id: the body is not read
	e.Error.Code, e.Error.Message, e.Error.Data = codeModernNotEntitled, contract.MsgNotEntitled, map[string]string{"refusedFamily": family}
	b, _ := json.Marshal(&e) // strings only
	v, _ := notEntitledRefusals.LoadOrStore(family, &headerRefusal{body: b, family: []string{family}[:1:1]})
	return v.(*headerRefusal)
}

var notEntitledRefusals sync.Map // family → *headerRefusal

// sharedWriter writes civic_mcp's answers on the per-call paths with the
// shared, read-only Content-Type value (contract.JSONWriter.SharedValues).
var sharedWriter = contract.JSONWriter{SharedValues: true}

// familySets holds the comma-separated form of each family set callers
// have (what Tool.Entitled and the tier servers take), so that a modern
// request joins its caller's families without an allocation.
type familySets struct {
	mu sync.RWMutex
	m  map[string]string
}

// csv is families comma-separated.
func (f *familySets) csv(families []string) string {
	switch len(families) {
	case 0:
		return ""
	case 1:
		return families[0]
	}
	var buf [256]byte
	b := buf[:0]
	for i, fam := range families {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, fam...)
	}
	f.mu.RLock()
	s, ok := f.m[string(b)]
	f.mu.RUnlock()
	if ok {
		return s
	}
	s = string(b)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.m) < maxTierServers { // as many as the tier servers kept
		f.m[s] = s
	}
	return s
}

// readMessage reads a POST's body and its head (transport.go's checks: size,
// batches, the method rule), or answers why not.
func (h *Handler) readMessage(w http.ResponseWriter, r *http.Request) ([]byte, rpcHead, bool) {
	body, head, refused := h.checkMessage(r)
	if refused != nil {
		refused(w)
		return nil, rpcHead{}, false
	}
	return body, head, true
}

// deferredRefusal writes an answer decided where it cannot be written yet (a
// modern call's body is read inside the chain: moderncall.go).
type deferredRefusal func(http.ResponseWriter)

// checkMessage reads a POST's body and its head, or returns the deferredRefusal.
func (h *Handler) checkMessage(r *http.Request) ([]byte, rpcHead, deferredRefusal) {
	body, refused := h.checkBody(r)
	if refused != nil {
		return nil, rpcHead{}, refused
	}
	head, refused := h.checkHead(body)
	if refused != nil {
		return nil, rpcHead{}, refused
	}
	return body, head, nil
}

// checkBody reads a POST's body: within MaxMessage, not a batch.
func (h *Handler) checkBody(r *http.Request) ([]byte, deferredRefusal) {
	body, err := readBody(r, h.MaxMessage)
	if errors.Is(err, errTooLarge) {
		return nil, func(w http.ResponseWriter) {
			h.metrics.refusals.WithLabelValues(refusedTooLarge).Inc()
			contract.WriteJSON(w, http.StatusRequestEntityTooLarge, contract.BodyTooLarge)
		}
	}
	if err != nil {
		return nil, h.refusing(refusedBadRequest, http.StatusBadRequest, nil, codeParseError, "The request body could not be read")
	}
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
		return nil, h.refusing(refusedBatch, http.StatusBadRequest, nil, codeInvalidRequest, "JSON-RPC batches are not accepted (MCP 2025-06-18 and later)")
	}
	return body, nil
}

// checkHead reads a message's head (readHead), or returns the deferredRefusal.
func (h *Handler) checkHead(body []byte) (rpcHead, deferredRefusal) {
	head, err := readHead(body)
	switch {
	case errors.Is(err, errAmbiguousMember):
		return rpcHead{}, h.refusing(refusedBadRequest, http.StatusBadRequest, nil, codeInvalidRequest, "Invalid Request: "+err.Error())
	case err != nil:
		return rpcHead{}, h.refusing(refusedBadRequest, http.StatusBadRequest, nil, codeParseError, "The request body is not a JSON-RPC message")
	}
	return head, nil
}

// refusing is h.refuse, to be written later.
func (h *Handler) refusing(reason string, status int, id json.RawMessage, code int, msg string) deferredRefusal {
	return func(w http.ResponseWriter) { h.refuse(w, reason, status, id, code, msg) }
}
