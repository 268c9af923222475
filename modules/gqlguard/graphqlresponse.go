package gqlguard

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/civicgate/civicgate/modules/contract"
)

// The guard's refusals in the other shapes clients ask for: the
// application/graphql-response+json media type of GraphQL over HTTP (request
// errors are 4xx, every body a GraphQL response), and the `error` message
// payload of graphql-transport-ws (a list of GraphQL errors). Each refusal
// is first written as it is for application/json clients (today's exact
// bodies, docs/api.md "Errors") and then converted, so every shape says the
// same thing.

const mediaGraphQLResponse = "application/graphql-response+json"

// codeNotEntitled is the extensions.code of a 403 "Tier not entitled to this
// endpoint family" in GraphQL shape.
const codeNotEntitled = "NOT_ENTITLED"

// refusalRecorder records one refusal written by the checks.
type refusalRecorder struct {
	header http.Header
	status int
	body   []byte
}

func (r *refusalRecorder) Header() http.Header {
	if r.header == nil {
		r.header = make(http.Header)
	}
	return r.header
}

func (r *refusalRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *refusalRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body = append(r.body, b...)
	return len(b), nil
}

// graphqlResponseWriter is the ResponseWriter of a request that accepts
// application/graphql-response+json: the checks write to it, finish sends
// the converted refusal.
type graphqlResponseWriter struct {
	w   http.ResponseWriter
	rec refusalRecorder
}

func (g *graphqlResponseWriter) Header() http.Header         { return g.w.Header() }
func (g *graphqlResponseWriter) WriteHeader(status int)      { g.rec.WriteHeader(status) }
func (g *graphqlResponseWriter) Write(b []byte) (int, error) { return g.rec.Write(b) }

// finish writes the recorded refusal as a GraphQL response: a body with
// "data": null (the document was refused before execution: a request
// error) loses it and becomes a 400, except PersistedQueryNotFound and
// PersistedQueryNotSupported, which APQ clients expect as 200; an
// {"error": …} body becomes {"errors":[…]} with its status kept.
func (g *graphqlResponseWriter) finish() {
	status, errs := refusalErrors(g.rec.status, g.rec.body, g.w.Header().Get(contract.HeaderRefusedFamily))
	if status == http.StatusOK && !persistedQueryMiss(errs) {
		status = http.StatusBadRequest
	}
	h := g.w.Header()
	h.Set("Content-Type", mediaGraphQLResponse)
	body := append(append([]byte(`{"errors":`), errs...), '}')
	h.Set("Content-Length", strconv.Itoa(len(body)))
	g.w.WriteHeader(status)
	_, _ = g.w.Write(body)
}

func persistedQueryMiss(errs []byte) bool {
	return bytes.Contains(errs, []byte(`"code":"PERSISTED_QUERY_NOT_FOUND"`)) ||
		bytes.Contains(errs, []byte(`"code":"PERSISTED_QUERY_NOT_SUPPORTED"`))
}

// refusalErrors returns a refusal's status and its errors as a JSON list of
// GraphQL errors, each with an extensions.code (added from the status when
// the body had none). refusedFamily is the refusal's Civic-Refused-Family
// header: a NOT_ENTITLED error carries it as extensions.family
// (docs/design.md D41).
func refusalErrors(status int, body []byte, refusedFamily string) (int, []byte) {
	var shape struct {
		Error  *string           `json:"error"`
		Errors []json.RawMessage `json:"errors"`
	}
	if err := json.Unmarshal(body, &shape); err != nil || (shape.Error == nil && len(shape.Errors) == 0) {
		return http.StatusInternalServerError, errorList(contract.MsgInternal, "INTERNAL_SERVER_ERROR")
	}
	if shape.Error != nil {
		code := codeForStatus(status, *shape.Error)
		if code != codeNotEntitled {
			refusedFamily = ""
		}
		return status, errorListWithFamily(*shape.Error, code, refusedFamily)
	}
	out := []byte{'['}
	for i, e := range shape.Errors {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, withCode(e, codeForStatus(status, ""))...)
	}
	return status, append(out, ']')
}

// withCode adds extensions.code to one error object that has none.
func withCode(e json.RawMessage, code string) []byte {
	var item map[string]json.RawMessage
	if json.Unmarshal(e, &item) != nil {
		return e
	}
	var ext map[string]json.RawMessage
	if raw, ok := item["extensions"]; ok && json.Unmarshal(raw, &ext) == nil {
		if _, has := ext["code"]; has {
			return e
		}
	}
	if ext == nil {
		ext = map[string]json.RawMessage{}
	}
	ext["code"], _ = json.Marshal(code)
	item["extensions"], _ = json.Marshal(ext)
	// message first, as every other body writes it
	msg := item["message"]
	delete(item, "message")
	rest, _ := json.Marshal(item)
	out := append([]byte(`{"message":`), msg...)
	if len(rest) > 2 {
		out = append(out, ',')
		out = append(out, rest[1:len(rest)-1]...)
	}
	return append(out, '}')
}

// errorList renders [{"message":msg,"extensions":{"code":code}}], message
// first as every other body.
func errorList(msg, code string) []byte { return errorListWithFamily(msg, code, "") }

// errorListWithFamily is errorList with extensions.family after the code
// when family is not empty.
func errorListWithFamily(msg, code, family string) []byte {
	type ext struct {
		Code   string `json:"code"`
		Family string `json:"family,omitempty"`
	}
	type item struct {
		Message    string `json:"message"`
		Extensions ext    `json:"extensions"`
	}
	return marshal([]item{{Message: msg, Extensions: ext{Code: code, Family: family}}})
}

// codeForStatus names the extensions.code of a refusal that carries none.
func codeForStatus(status int, msg string) string {
	switch status {
	case http.StatusForbidden:
		if msg == contract.MsgNotEntitled {
			return codeNotEntitled
		}
		return "FORBIDDEN"
	case http.StatusMethodNotAllowed:
		return "METHOD_NOT_ALLOWED"
	case http.StatusRequestEntityTooLarge:
		return "PAYLOAD_TOO_LARGE"
	case http.StatusUnsupportedMediaType:
		return "UNSUPPORTED_MEDIA_TYPE"
	case http.StatusTooManyRequests:
		return "RATE_LIMITED"
	case http.StatusInternalServerError:
		return "INTERNAL_SERVER_ERROR"
	}
	return "BAD_REQUEST"
}
