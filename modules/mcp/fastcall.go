package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"unicode/utf8"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/civicgate/civicgate/modules/contract"
)

// civic_mcp answers a plain tools/call itself (docs/design.md D50): the
// go-sdk spends about 200 µs of CPU on one (a 32 KiB decoder buffer for
// each of six Unmarshals, a goroutine and channels per call, SSE framing),
// six times what the same GraphQL request costs through the whole chain.
// The steps are the SDK path's own — the entitlement check, the argument
// check, the GraphQL request through next on the POST's goroutine, the
// rendering (toolcall.go) — and the JSON-RPC response is encoded as the
// SDK encodes it, from the same values, so its bytes are the SDK's; it
// goes out as one application/json body, which Streamable HTTP lets a
// server answer a POST with. Whatever is not plain goes to the SDK as before:
// every other method, a tools/call carrying _meta (a progress token) or
// members beyond name and arguments, an id or a name the SDK might read
// differently, a tool not in the manifest, a session not yet initialized.

// lastEventIDHeader is Last-Event-ID, canonical.
const lastEventIDHeader = "Last-Event-Id"

// sdkAnswersCalls sends every tools/call to the SDK (tests compare the
// two paths).
var sdkAnswersCalls atomic.Bool

// maxNesting is the SDK decoder's nesting bound: a deeper message is the
// SDK's to refuse.
const maxNesting = 1000

// plainCall is a tools/call the fast path may answer.
type plainCall struct {
	id        jsonrpc.ID
	name      string
	arguments json.RawMessage // nil when absent
}

// parsePlainCall reads body as a plain tools/call: valid UTF-8, nested at
// most maxNesting deep, exactly the members jsonrpc "2.0", id, method
// "tools/call" and params, params an object of name and, optionally,
// arguments, the id and the name plain (plainID, plainString). Members are
// matched exactly, as the SDK's case-sensitive decoder matches them.
func parsePlainCall(body []byte) (plainCall, bool) {
	var c plainCall
	if !utf8.Valid(body) || nestedDeeper(body, maxNesting) {
		return c, false
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil || len(msg) != 4 ||
		string(msg["jsonrpc"]) != `"2.0"` || string(msg["method"]) != `"tools/call"` {
		return c, false
	}
	var ok bool
	if c.id, ok = plainID(msg["id"]); !ok {
		return c, false
	}
	var params map[string]json.RawMessage
	if p := msg["params"]; len(p) == 0 || p[0] != '{' || json.Unmarshal(p, &params) != nil {
		return c, false
	}
	args, hasArgs := params["arguments"]
	if len(params) != 1 && !(len(params) == 2 && hasArgs) {
		return c, false // _meta, inputResponses, requestState, or no name
	}
	if c.name, ok = plainString(params["name"]); !ok {
		return c, false
	}
	c.arguments = args
	return c, true
}

// plainID is a request id the SDK reads as the fast path does: a string
// without escapes, or an integer of at most 15 digits (exact as the
// float64 the SDK decodes it to).
func plainID(raw json.RawMessage) (jsonrpc.ID, bool) {
	if s, ok := plainString(raw); ok {
		id, err := jsonrpc.MakeID(s)
		return id, err == nil
	}
	digits := bytes.TrimPrefix(raw, []byte("-"))
	if len(digits) == 0 || len(digits) > 15 || digits[0] == '0' && len(digits) > 1 {
		return jsonrpc.ID{}, false
	}
	for _, d := range digits {
		if d < '0' || d > '9' {
			return jsonrpc.ID{}, false
		}
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(float64(n)) // as the SDK makes it from the float64 it decodes
	return id, err == nil
}

// plainString is a JSON string without escapes (its bytes are its value).
func plainString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' || bytes.IndexByte(raw, '\\') >= 0 {
		return "", false
	}
	return string(raw[1 : len(raw)-1]), true
}

// nestedDeeper reports whether data nests objects and arrays deeper than
// max, counted as the SDK's decoder counts them.
func nestedDeeper(data []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > max {
				return true
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return false
}

// answerCall answers a tools/call POST of session s without the SDK when
// the call is plain and the SDK would run it (its session initialized, the
// tool in the manifest). It reports false, having written nothing, when
// the SDK must answer.
func (h *Handler) answerCall(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, s *session, body []byte) bool {
	if sdkAnswersCalls.Load() || len(r.Header[lastEventIDHeader]) > 0 {
		return false // the SDK refuses Last-Event-ID on a POST
	}
	if jsonOK, _ := accepts(r.Header["Accept"]); !jsonOK {
		return false
	}
	c, ok := parsePlainCall(body)
	if !ok || !s.sdkReady() {
		return false
	}
	tool, known := h.tools.Lookup(c.name)
	if !known {
		return false // the SDK's "unknown tool"
	}
	live := s.register(r, next, c.id)
	if live == nil {
		// As the SDK refuses a request id already in flight in the session.
		writeCallAnswer(w, http.StatusBadRequest, c.id, nil, &jsonrpc.Error{
			Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("duplicate in-flight request ID %v", c.id.Raw())})
		return true
	}
	var res *mcpsdk.CallToolResult
	rpcErr := h.outsideTier(s.tierFamilies(), tool)
	if rpcErr == nil {
		res, rpcErr = h.runTool(tool, c.arguments, func(gql []byte) answer {
			if live.ctx.Err() != nil { // the session ended: nothing is sent
				return answer{canceled: true}
			}
			return h.forward(live, gql)
		})
	}
	// Forgotten before the answer leaves: the client may reuse the id then.
	s.unregister(live)
	writeCallAnswer(w, http.StatusOK, c.id, res, rpcErr)
	return true
}

// Response headers of the SDK's application/json answers.
var noCache = []string{"no-cache, no-transform"}

// writeCallAnswer writes the JSON-RPC response to the call id — res, or
// rpcErr — as the SDK encodes it (jsonrpc2's NewResponse and
// EncodeMessage: no HTML escaping), in one application/json body.
func writeCallAnswer(w http.ResponseWriter, status int, id jsonrpc.ID, res *mcpsdk.CallToolResult, rpcErr error) {
	data, err := encodeCallAnswer(id, res, rpcErr, false)
	if err != nil { // a result is built from JSON already parsed
		status, data = http.StatusInternalServerError, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}`)
	}
	w.Header()["Cache-Control"] = noCache
	contract.WriteJSON(w, status, data)
}

// encodeCallAnswer encodes the response to the call id. A result is
// marshaled as the SDK marshals it and put in the envelope EncodeMessage
// would write around it ({"jsonrpc","id","result"}, the result compact
// already), so that it is not encoded twice; complete adds the
// "resultType":"complete" member 2026-07-28 requires, last, where
// CallToolResult.MarshalJSON writes it.
func encodeCallAnswer(id jsonrpc.ID, res *mcpsdk.CallToolResult, rpcErr error, complete bool) ([]byte, error) {
	if rpcErr != nil {
		return jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: rpcErr})
	}
	return encodeResult(id, res, nil, complete)
}

// encodeResult is encodeCallAnswer of a result, first (when not empty)
// written as the result's first members, a comma after them: the envelope,
// the id and the result are encoded into one buffer, sized for a small
// answer, with no copy between them (docs/design.md D84).
func encodeResult(id jsonrpc.ID, res *mcpsdk.CallToolResult, first []byte, complete bool) ([]byte, error) {
	if res.Content == nil { // as the SDK's callTool: "content" is never null
		r := *res
		r.Content = []mcpsdk.Content{}
		res = &r
	}
	var buf bytes.Buffer
	buf.Grow(1024 + len(first))
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	if n, ok := id.Raw().(int64); ok { // as json.Marshal writes an int64
		var digits [20]byte
		buf.Write(strconv.AppendInt(digits[:0], n, 10))
	} else {
		idJSON, err := marshalUnescaped(id.Raw())
		if err != nil {
			return nil, err
		}
		buf.Write(idJSON)
	}
	buf.WriteString(`,"result":`)
	open := buf.Len() // the result's '{'
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		return nil, err
	}
	data := bytes.TrimRight(buf.Bytes(), "\n")
	if len(first) > 0 { // a result is an object: '{' starts it
		data = slices.Insert(data, open+1, first...)
	}
	if complete { // '}' ends it
		data = append(data[:len(data)-1], `,"resultType":"complete"}`...)
	}
	return append(data, '}'), nil
}

// marshalUnescaped is json.Marshal without HTML escaping, as the SDK
// marshals a result.
func marshalUnescaped(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// cancelNamed cancels the call civic_mcp answers that a
// notifications/cancelled body names, as the SDK cancels the handler of a
// call it runs (which then answers "The call was canceled.").
func (s *session) cancelNamed(body []byte) {
	var msg, params map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil || json.Unmarshal(msg["params"], &params) != nil {
		return
	}
	id, ok := plainID(params["requestId"])
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.calls {
		if c.rpcID == id {
			c.cancel()
		}
	}
}
