package gqlguard

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/civicgate/civicgate/modules/contract"
)

// extensions.code values of the HTTP 200 GraphQL error responses.
const (
	codeOperationNotAllowed  = "OPERATION_NOT_ALLOWED"
	codeIntrospectionOff     = "INTROSPECTION_DISABLED"
	codeTooDeep              = "QUERY_TOO_DEEP"
	codeTooManyAliases       = "TOO_MANY_ALIASES"
	codeTooManyRootFields    = "TOO_MANY_ROOT_FIELDS"
	codeTooManyDirectives    = "TOO_MANY_DIRECTIVES"
	codeTooCostly            = "QUERY_TOO_COMPLEX"
	msgMethodNotAllowed      = "Method not allowed: use POST"
	msgUnsupportedMediaType  = "Unsupported content type: use application/json"
	msgBodyTooLarge          = contract.MsgBodyTooLarge
	msgBearerInDocument      = "Request must not contain the bearer token"
	msgReadFailed            = "Request body could not be read"
	msgBodyTimeout           = "Request body timed out"
	msgOnlyQueriesAreAllowed = "Only query operations are allowed"
	msgIntrospectionDisabled = "GraphQL introspection is not allowed"
)

// messageBody renders {"errors":[{"message":msg}]} (the 4xx request errors;
// docs/api.md "Errors").
func messageBody(msg string) []byte { return contract.MessageBody(msg) }

func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return contract.BodyInternal
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// writeNotEntitled writes the 403 of an operation the caller's tier is not
// entitled to: the fixed body clients match on, and the families it lacks in
// Civic-Refused-Family (docs/design.md D41), which the GraphQL-shaped
// refusals carry as extensions.family (refusedFamilyOf).
func writeNotEntitled(w http.ResponseWriter, families string) {
	if families != "" {
		w.Header().Set(contract.HeaderRefusedFamily, families)
	}
	writeJSON(w, http.StatusForbidden, contract.BodyNotEntitled)
}

// bodyWriter writes the guard's JSON bodies: with Content-Length.
var bodyWriter = contract.JSONWriter{ContentLength: true}

// writeJSON writes a body with Content-Type and Content-Length.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	bodyWriter.Write(w, status, body)
}
