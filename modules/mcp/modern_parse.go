package mcp

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

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

// parseModernMessage is readHead and parseModernCall in one decode of the
// body, for a message both would read without an error of their own (every
// call a client sends): nested within the SDK's bound, decoded without a
// type error with params present, its id and method members plain. Then
// head and c (or rpcErr) are what the two would have returned, the decode
// of each member the same; ok false says nothing was decided, and the two
// must read the body (docs/design.md D84).
func parseModernMessage(body []byte) (head rpcHead, c modernCallMessage, rpcErr *jsonrpc.Error, ok bool) {
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  *modernParams   `json:"params"`
	}
	if nestedDeeper(body, maxNesting) || json.Unmarshal(body, &msg) != nil || msg.Params == nil || !routedMembersPlain(body) {
		return rpcHead{}, c, nil, false
	}
	head = rpcHead{ID: msg.ID, Method: msg.Method}
	if id, valid := modernID(msg.ID); valid {
		c.id = id
	}
	if !c.id.IsValid() || msg.JSONRPC != "2.0" {
		return head, c, &jsonrpc.Error{Code: codeInvalidRequest, Message: "Invalid Request"}, true
	}
	c, rpcErr = c.checkParams(msg.Params)
	return head, c, rpcErr, true
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
	if id, ok := plainID(raw); ok { // the same ID, without decoding into an any
		return id, true
	}
	var v any
	if len(raw) == 0 || (raw[0] != '"' && raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) || json.Unmarshal(raw, &v) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(v)
	return id, err == nil
}
