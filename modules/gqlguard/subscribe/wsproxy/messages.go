package wsproxy

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Client message types of graphql-transport-ws (PROTOCOL.md).
const (
	msgConnectionInit = "connection_init"
	msgPing           = "ping"
	msgPong           = "pong"
	msgSubscribe      = "subscribe"
	msgComplete       = "complete"
)

// msgConnectionAck is the server's answer to connection_init: subscribes are
// allowed from then on.
const msgConnectionAck = "connection_ack"

// msgError is the server's error message: it ends one subscription with
// errors.
const msgError = "error"

// clientMessage is one decoded client message. Only these members reach
// the upstream: every forwarded message is re-encoded from them, so the
// upstream reads exactly what the filter decided on (no duplicate or
// differently-cased members to read another way).
type clientMessage struct {
	Type    string          `json:"type"`
	ID      *string         `json:"id"`
	Payload json.RawMessage `json:"payload"`
}

// decodeClientMessage decodes msg; a failure is a close 4400.
func decodeClientMessage(msg []byte) (clientMessage, error) {
	var m clientMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		return m, &closeError{closeBadRequest, "Invalid message received"}
	}
	switch m.Type {
	case msgConnectionInit, msgPing, msgPong:
	case msgSubscribe, msgComplete:
		if m.ID == nil || *m.ID == "" {
			return m, &closeError{closeBadRequest, "Invalid message received: missing id"}
		}
	default:
		return m, &closeError{closeBadRequest, "Invalid message received: unknown type"}
	}
	return m, nil
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}

// appendMessage appends {"id":…,"type":…,"payload":…} to dst, leaving out
// an id that is nil and a payload that is empty.
func appendMessage(dst []byte, typ string, id *string, payload []byte) []byte {
	dst = append(dst, '{')
	if id != nil {
		dst = append(dst, `"id":`...)
		dst = appendJSONString(dst, *id)
		dst = append(dst, ',')
	}
	dst = append(dst, `"type":`...)
	dst = appendJSONString(dst, typ)
	if len(payload) > 0 {
		dst = append(dst, `,"payload":`...)
		dst = append(dst, payload...)
	}
	return append(dst, '}')
}

func appendJSONString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(dst, b...)
}

// errorMessage is the protocol's error message for subscription id.
func errorMessage(id string, errs []byte) []byte {
	return appendMessage(nil, "error", &id, errs)
}

// graphQLErrors is a one-error array [{"message":…,"extensions":{"code":…}}].
func graphQLErrors(message, code string) []byte {
	b := append([]byte(`[{"message":`), appendJSONString(nil, message)...)
	b = append(b, `,"extensions":{"code":`...)
	b = appendJSONString(b, code)
	return append(b, `}}]`...)
}

// rateLimitedErrors is the refusal of a subscribe over the rate limit.
func rateLimitedErrors(retryAfterSeconds int64) []byte {
	b := []byte(`[{"message":"Rate limit exceeded","extensions":{"code":"RATE_LIMITED","retryAfter":`)
	b = strconv.AppendInt(b, retryAfterSeconds, 10)
	return append(b, `}}]`...)
}
