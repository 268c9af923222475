package mcp

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/civicgate/civicgate/internal/rawjson"
)

// The router (transport.go) decides by a message's method and id what a
// POST is — a tools/call civic_mcp answers or charges as a call, an
// initialize, a message the message rate meters (messagerate.go) — and the
// SDK then serves the same bytes as what its own decoder reads. The two
// must never disagree (docs/design.md D65): the SDK's decoder
// (go-sdk internal/json: segmentio with DontMatchCaseInsensitiveStructFields)
// matches member names case-sensitively, after unescaping, the last of a
// repeated member winning, where encoding/json into a struct also matches
// "Method" or "METHOD". So before the router reads the head, a message whose
// id or method member is written in any other way than once and exactly —
// "Method", "\u006dethod", "method" twice — is refused as an Invalid
// Request: on what remains, every decoder reads the same member.

// rpcHead is what civic_mcp reads of a POSTed JSON-RPC message.
type rpcHead struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// routedMembers are the members the router reads: each must be written
// once, exactly so, if at all.
var routedMembers = [...]string{"id", "method"}

var (
	errNotMessage      = errors.New("the request body is not a JSON-RPC message")
	errAmbiguousMember = errors.New("the id and method members must each be written once, exactly so (lower case, without escapes)")
)

// readHead reads body's id and method as the SDK's decoder reads them:
// errNotMessage for a body that is not JSON within the SDK's nesting bound
// or not shaped as a message (an id or a method of the wrong type),
// errAmbiguousMember for one whose id or method member is not plain
// (routedMembersPlain).
func readHead(body []byte) (rpcHead, error) {
	var head rpcHead
	// The SDK's decoder stops at 1 000 levels with a plain-text 400: refused
	// here first, in JSON, like any other body that is not a message.
	if nestedDeeper(body, maxNesting) || json.Unmarshal(body, &head) != nil {
		return rpcHead{}, errNotMessage
	}
	if !routedMembersPlain(body) {
		return rpcHead{}, errAmbiguousMember
	}
	return head, nil
}

// routedMembersPlain reports whether each of routedMembers appears among
// the members of the JSON object body (valid JSON: json.Unmarshal accepted
// it) at most once, and only written exactly so: no member whose name, its
// escapes decoded, equals one of them up to case (as encoding/json folds
// names) but is spelled otherwise. A body that is not an object has none.
func routedMembersPlain(body []byte) bool {
	var seen [len(routedMembers)]bool
	plain := true
	rawjson.Members(body, func(quotedName, _ []byte) bool {
		plain = plainMember(quotedName, &seen)
		return plain
	})
	return plain
}

// plainMember checks one member name (quoted, as written) against
// routedMembers, marking the one it is in seen.
func plainMember(quoted []byte, seen *[len(routedMembers)]bool) bool {
	raw, name := quoted[1:len(quoted)-1], quoted[1:len(quoted)-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		var s string
		if json.Unmarshal(quoted, &s) != nil {
			return false
		}
		name = []byte(s)
	}
	for i, m := range routedMembers {
		if !bytes.EqualFold(name, []byte(m)) {
			continue
		}
		if string(raw) != m || seen[i] {
			return false
		}
		seen[i] = true
	}
	return true
}
