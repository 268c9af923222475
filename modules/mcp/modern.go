package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

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
	families := strings.Join(caller.Families, ",")
	h.listens.seen(caller.KeyID, families) // a tier change reaches the key's open streams (listen.go)
	if method == methodToolCall {
		// The tier is checked against the tool the header names before a
		// byte of the body is read: a call the tier lacks costs no parse.
		if t, known := h.tools.Lookup(name); known {
			if !t.Entitled(families) {
				h.metrics.refusals.WithLabelValues(refusedNotEntitled).Inc()
				h.metrics.calls.WithLabelValues(callNotEntitled).Inc()
				w.Header()[contract.HeaderRefusedFamily] = []string{t.Family}
				contract.WriteJSON(w, http.StatusForbidden, notEntitledBody(t.Family))
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
	case method != methodDiscover && !serverMethods[method]:
		h.refuse(w, refusedBadRequest, http.StatusNotFound, head.ID, codeMethodNotFound, "Method not found")
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	h.stateless.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tierKey{}, h.tierServer(families))))
}

// notEntitledBody is the modern deferredRefusal of a call of a tool of family,
// encoded once per family (the deferredRefusal from the headers is the cheap path).
func notEntitledBody(family string) []byte {
	if b, ok := notEntitledBodies.Load(family); ok {
		return b.([]byte)
	}
	e := rpcError{JSONRPC: "2.0"} // no id: the body is not read
	e.Error.Code, e.Error.Message, e.Error.Data = codeModernNotEntitled, contract.MsgNotEntitled, map[string]string{"refusedFamily": family}
	b, _ := json.Marshal(&e) // strings only
	notEntitledBodies.Store(family, b)
	return b
}

var notEntitledBodies sync.Map // family → []byte

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
	body, err := readBody(r, h.MaxMessage)
	if errors.Is(err, errTooLarge) {
		return nil, rpcHead{}, func(w http.ResponseWriter) {
			h.metrics.refusals.WithLabelValues(refusedTooLarge).Inc()
			contract.WriteJSON(w, http.StatusRequestEntityTooLarge, contract.BodyTooLarge)
		}
	}
	if err != nil {
		return nil, rpcHead{}, h.refusing(refusedBadRequest, http.StatusBadRequest, nil, codeParseError, "The request body could not be read")
	}
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
		return nil, rpcHead{}, h.refusing(refusedBatch, http.StatusBadRequest, nil, codeInvalidRequest, "JSON-RPC batches are not accepted (MCP 2025-06-18 and later)")
	}
	head, err := readHead(body)
	switch {
	case errors.Is(err, errAmbiguousMember):
		return nil, rpcHead{}, h.refusing(refusedBadRequest, http.StatusBadRequest, nil, codeInvalidRequest, "Invalid Request: "+err.Error())
	case err != nil:
		return nil, rpcHead{}, h.refusing(refusedBadRequest, http.StatusBadRequest, nil, codeParseError, "The request body is not a JSON-RPC message")
	}
	return body, head, nil
}

// refusing is h.refuse, to be written later.
func (h *Handler) refusing(reason string, status int, id json.RawMessage, code int, msg string) deferredRefusal {
	return func(w http.ResponseWriter) { h.refuse(w, reason, status, id, code, msg) }
}

// modernCallMessage is a tools/call of revision 2026-07-28 as read.
type modernCallMessage struct {
	id        jsonrpc.ID
	name      string
	arguments json.RawMessage
	version   string
}

// parseModernCall reads a tools/call body in one pass: the id a string or
// a number, params an object with a string name, _meta an object with the
// protocol version and the client's capabilities (the fields 2026-07-28
// requires: -32602 without them), clientInfo, when sent, an Implementation.
// Only civic_mcp reads a modern call's body, and what it reads must equal
// the headers (modernCall), so no other reading of it can run.
func parseModernCall(body []byte) (modernCallMessage, *jsonrpc.Error) {
	// One pass when the message decodes without a type error (every call
	// a client sends); parseModernCallChecked reads anything else, member
	// by member, for its exact error. A message the one pass decodes, the
	// checked reading decodes to the same values.
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Params  *modernParams   `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Params == nil {
		return parseModernCallChecked(body)
	}
	var c modernCallMessage
	if id, ok := modernID(msg.ID); ok {
		c.id = id
	}
	if !c.id.IsValid() || msg.JSONRPC != "2.0" {
		return c, &jsonrpc.Error{Code: codeInvalidRequest, Message: "Invalid Request"}
	}
	return c.checkParams(msg.Params)
}

// modernParams are a modern tools/call's params as read.
type modernParams struct {
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      *struct {
		Version      *string         `json:"io.modelcontextprotocol/protocolVersion"`
		Capabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
		ClientInfo   *struct {
			Name    *string `json:"name"`
			Version *string `json:"version"`
		} `json:"io.modelcontextprotocol/clientInfo"`
	} `json:"_meta"`
}

// checkParams fills c from params, or says what 2026-07-28 requires of them.
func (c modernCallMessage) checkParams(params *modernParams) (modernCallMessage, *jsonrpc.Error) {
	invalid := func(msg string) (modernCallMessage, *jsonrpc.Error) {
		return c, &jsonrpc.Error{Code: codeInvalidParams, Message: msg}
	}
	if params.Name == nil || *params.Name == "" {
		return invalid("params.name must be a tool's name")
	}
	c.name, c.arguments = *params.Name, params.Arguments
	m := params.Meta
	if m == nil || m.Version == nil || *m.Version == "" {
		return invalid("missing or invalid _meta field " + metaVersion)
	}
	c.version = *m.Version
	if len(m.Capabilities) == 0 || m.Capabilities[0] != '{' {
		return invalid("missing or invalid _meta field " + metaCapabilities)
	}
	if ci := m.ClientInfo; ci != nil && (ci.Name == nil || ci.Version == nil) {
		return invalid("invalid _meta field " + metaClientInfo)
	}
	return c, nil
}

// parseModernCallChecked is parseModernCall's reading of a message the
// one pass could not decode.
func parseModernCallChecked(body []byte) (modernCallMessage, *jsonrpc.Error) {
	var c modernCallMessage
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Params  json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return c, &jsonrpc.Error{Code: codeParseError, Message: "The request body is not a JSON-RPC message"}
	}
	if id, ok := modernID(msg.ID); ok {
		c.id = id
	}
	if !c.id.IsValid() || msg.JSONRPC != "2.0" {
		return c, &jsonrpc.Error{Code: codeInvalidRequest, Message: "Invalid Request"}
	}
	var params modernParams
	if len(msg.Params) == 0 || msg.Params[0] != '{' || json.Unmarshal(msg.Params, &params) != nil {
		return c, &jsonrpc.Error{Code: codeInvalidParams, Message: "params must be an object with a string name"}
	}
	return c.checkParams(&params)
}

// modernID is a request id: a JSON string or number (jsonrpc.MakeID's).
func modernID(raw json.RawMessage) (jsonrpc.ID, bool) {
	var v any
	if len(raw) == 0 || (raw[0] != '"' && raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) || json.Unmarshal(raw, &v) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(v)
	return id, err == nil
}

// writeModernAnswer writes the response to a call: an error, or the result
// as the SDK's stateless server writes one in 2026-07-28 — the server's
// identity added to _meta, resultType "complete" after the result's members
// (CallToolResult.MarshalJSON's order).
func writeModernAnswer(w http.ResponseWriter, status int, id jsonrpc.ID, res *mcpsdk.CallToolResult, rpcErr error, impl *mcpsdk.Implementation) {
	var data []byte
	var err error
	if rpcErr != nil || res == nil {
		data, err = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: rpcErr})
	} else if len(res.Meta) == 0 && impl != nil {
		data, err = encodeCallAnswer(id, res, nil, true)
		if err == nil { // _meta is CallToolResult's first member
			var info []byte
			if info, err = serverInfoMember(impl); err == nil {
				i := bytes.Index(data, []byte(`"result":{`)) + len(`"result":{`)
				data = slices.Concat(data[:i], info, data[i:])
			}
		}
	} else {
		r := *res
		meta := make(mcpsdk.Meta, len(r.Meta)+1)
		for k, v := range r.Meta {
			meta[k] = v
		}
		if _, ok := meta[metaServerInfo]; !ok {
			meta[metaServerInfo] = impl
		}
		r.Meta = meta
		data, err = encodeCallAnswer(id, &r, nil, true)
	}
	if err != nil {
		status, data = http.StatusInternalServerError, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}`)
	}
	w.Header()["Cache-Control"] = noCache
	contract.WriteJSON(w, status, data)
}

// serverInfoMember is `"_meta":{"…/serverInfo":impl},` as the SDK writes
// it, encoded once per Implementation.
func serverInfoMember(impl *mcpsdk.Implementation) ([]byte, error) {
	if v, ok := serverInfoCache.Load(impl); ok {
		return v.([]byte), nil
	}
	enc, err := marshalUnescaped(mcpsdk.Meta{metaServerInfo: impl})
	if err != nil {
		return nil, err
	}
	b := slices.Concat([]byte(`"_meta":`), []byte(enc), []byte(","))
	serverInfoCache.Store(impl, b)
	return b, nil
}

var serverInfoCache sync.Map // *mcpsdk.Implementation → []byte

// tierKey carries a modern request's tier server to statelessServerOf.
type tierKey struct{}

// statelessServerOf is the stateless SDK handler's getServer.
func statelessServerOf(r *http.Request) *mcpsdk.Server {
	s, _ := r.Context().Value(tierKey{}).(*mcpsdk.Server)
	return s
}

// maxTierServers bounds the servers kept, one per distinct family set (the
// configuration's tiers); a family set past it gets a server of its own for
// the request.
const maxTierServers = 256

// tierServers are the stateless SDK servers of one configuration.
type tierServers struct {
	mu sync.Mutex
	m  map[string]*mcpsdk.Server
}

// tierServer is the stateless server of a family set: its tools (never
// called through it: civic_mcp answers every modern tools/call), every
// revision served, list results private to the tier (setCacheable).
func (h *Handler) tierServer(families string) *mcpsdk.Server {
	h.tiers.mu.Lock()
	defer h.tiers.mu.Unlock()
	if s := h.tiers.m[families]; s != nil {
		return s
	}
	srv := mcpsdk.NewServer(h.impl, &mcpsdk.ServerOptions{
		SupportedProtocolVersions: allVersions,
		Capabilities:              &mcpsdk.ServerCapabilities{Tools: &mcpsdk.ToolCapabilities{ListChanged: true}}, // listen.go
		SetCacheable:              setCacheable,
	})
	for _, t := range h.tools.For(families) {
		srv.AddTool(t, unreachable)
	}
	if len(h.tiers.m) < maxTierServers {
		h.tiers.m[families] = srv
	}
	return srv
}

// unreachable is the tool handler of a stateless server.
func unreachable(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	return toolError("The call was not run."), nil
}

// setCacheable is every server's ServerOptions.SetCacheable: a tool list
// differs per tier, so it is private to the caller; discovery says the same
// to everyone.
func setCacheable(_ context.Context, req mcpsdk.Request, c *mcpsdk.Cacheable) {
	c.TTLMs = listTTLMillis
	c.CacheScope = "public"
	if _, ok := req.(*mcpsdk.ListToolsRequest); ok {
		c.CacheScope = "private"
	}
}
