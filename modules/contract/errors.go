package contract

import (
	"bytes"
	"encoding/json"
)

// The messages of the client-facing error bodies, exactly as docs/api.md
// "Errors" lists them (clients match on them; docs/design.md D10).
const (
	MsgMissingBearer    = "Missing bearer token"
	MsgMalformedHeader  = "Malformed authorization header"
	MsgInvalidKey       = "Invalid API key"
	MsgKeyRevoked       = "API key revoked"
	MsgKeyRotated       = "API key rotated out"
	MsgKeyExpired       = "API key expired"
	MsgWrongEnvironment = "API key not valid in this environment"
	MsgOrgSuspended     = "Organization suspended"
	MsgNotEntitled      = "Tier not entitled to this endpoint family"
	MsgRateLimited      = "Rate limit exceeded"
	MsgInternal         = "Internal Server Error"
	MsgNotFound         = "Not Found"
	MsgMethodNotAllowed = "Method Not Allowed"
	MsgMisdirected      = "Misdirected Request"
	MsgBadGateway       = "Bad Gateway"
	MsgGatewayTimeout   = "Gateway Timeout"
	MsgKeyInURL         = "API key must not be sent in the URL; use the Authorization header"
	MsgBodyTooLarge     = "Request body too large"
)

// HeaderRefusedFamily names, on a 403 "Tier not entitled to this endpoint
// family", the families the request needs and the caller's tier lacks
// (comma-separated, in name order); the body stays the fixed one clients
// match on (docs/design.md D41, docs/api.md "Errors").
const HeaderRefusedFamily = "Civic-Refused-Family"

// The error bodies, pre-encoded: {"error":…} for authentication, entitlement,
// quota, routing and server faults, {"errors":[{"message":…}]} for a request
// refused as sent. Written on refusal paths that must not allocate, so they
// are shared: read-only, never modify one (TestBodies pins them).
var (
	BodyMissingBearer    = []byte(`{"error":"Missing bearer token"}`)
	BodyMalformedHeader  = []byte(`{"error":"Malformed authorization header"}`)
	BodyInvalidKey       = []byte(`{"error":"Invalid API key"}`)
	BodyKeyRevoked       = []byte(`{"error":"API key revoked"}`)
	BodyKeyRotated       = []byte(`{"error":"API key rotated out"}`)
	BodyKeyExpired       = []byte(`{"error":"API key expired"}`)
	BodyWrongEnvironment = []byte(`{"error":"API key not valid in this environment"}`)
	BodyOrgSuspended     = []byte(`{"error":"Organization suspended"}`)
	BodyNotEntitled      = []byte(`{"error":"Tier not entitled to this endpoint family"}`)
	BodyRateLimited      = []byte(`{"error":"Rate limit exceeded"}`)
	BodyInternal         = []byte(`{"error":"Internal Server Error"}`)
	BodyNotFound         = []byte(`{"error":"Not Found"}`)
	BodyMethodNotAllowed = []byte(`{"error":"Method Not Allowed"}`)
	BodyMisdirected      = []byte(`{"error":"Misdirected Request"}`)
	BodyBadGateway       = []byte(`{"error":"Bad Gateway"}`)
	BodyGatewayTimeout   = []byte(`{"error":"Gateway Timeout"}`)
	BodyKeyInURL         = []byte(`{"errors":[{"message":"API key must not be sent in the URL; use the Authorization header"}]}`)
	BodyTooLarge         = []byte(`{"errors":[{"message":"Request body too large"}]}`)
)

// ErrorBody returns {"error":msg}, msg encoded as encoding/json does with
// HTML escaping off.
func ErrorBody(msg string) []byte {
	return wrap(`{"error":`, msg, false, `}`)
}

// MessageBody returns {"errors":[{"message":msg}]}, msg encoded as
// encoding/json does with HTML escaping off (<, > and & as they are): the
// form graphql_guard writes.
func MessageBody(msg string) []byte {
	return wrap(`{"errors":[{"message":`, msg, false, `}]}`)
}

// MessageBodyHTMLEscaped is MessageBody with encoding/json's default HTML
// escaping (<, > and & as \u003c, \u003e, \u0026): the form the webhook API
// and recordsd have always written.
func MessageBodyHTMLEscaped(msg string) []byte {
	return wrap(`{"errors":[{"message":`, msg, true, `}]}`)
}

// wrap returns prefix, msg as a JSON string, suffix.
func wrap(prefix, msg string, escapeHTML bool, suffix string) []byte {
	var buf bytes.Buffer
	buf.Grow(len(prefix) + len(msg) + len(suffix) + 3)
	buf.WriteString(prefix)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	_ = enc.Encode(msg) // a string always encodes; Encode appends a newline
	buf.Truncate(buf.Len() - 1)
	buf.WriteString(suffix)
	return buf.Bytes()
}
