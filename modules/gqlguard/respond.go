package gqlguard

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/civicgate/civicgate/modules/contract"
)

// extensions.code values of the HTTP 200 GraphQL error responses.
const (
	codeParseFailed          = "GRAPHQL_PARSE_FAILED"
	codeValidationFailed     = "GRAPHQL_VALIDATION_FAILED"
	codeOperationNotAllowed  = "OPERATION_NOT_ALLOWED"
	codeIntrospectionOff     = "INTROSPECTION_DISABLED"
	codeTooDeep              = "QUERY_TOO_DEEP"
	codeTooManyAliases       = "TOO_MANY_ALIASES"
	codeTooManyRootFields    = "TOO_MANY_ROOT_FIELDS"
	codeTooManyTokens        = "TOO_MANY_TOKENS"
	codeTooManyDirectives    = "TOO_MANY_DIRECTIVES"
	codeTooCostly            = "QUERY_TOO_COMPLEX"
	codeTooComplexToValidate = "DOCUMENT_TOO_COMPLEX"
	msgTooComplexToValidate  = "Document is too complex to validate"
	msgMethodNotAllowed      = "Method not allowed: use POST"
	msgUnsupportedMediaType  = "Unsupported content type: use application/json"
	msgBodyTooLarge          = contract.MsgBodyTooLarge
	msgBearerInDocument      = "Request must not contain the bearer token"
	msgReadFailed            = "Request body could not be read"
	msgBodyTimeout           = "Request body timed out"
	msgOnlyQueriesAreAllowed = "Only query operations are allowed"
	msgIntrospectionDisabled = "GraphQL introspection is not allowed"
)

func tooManyTokensMessage(max int) string {
	return "Document exceeds the maximum of " + strconv.Itoa(max) + " tokens"
}

type gqlError struct {
	Message   string
	Locations []location
	Code      string
}

type location struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

func locationsOf(pos *ast.Position) []location {
	if pos == nil {
		return nil
	}
	return []location{{Line: pos.Line, Column: pos.Column}}
}

func fromGQLErrors(list gqlerror.List, code string) []gqlError {
	out := make([]gqlError, 0, len(list))
	for _, e := range list {
		g := gqlError{Message: e.Message, Code: code}
		for _, l := range e.Locations {
			g.Locations = append(g.Locations, location{Line: l.Line, Column: l.Column})
		}
		out = append(out, g)
	}
	return out
}

// graphqlErrorBody renders {"data":null,"errors":[…]} with members in the
// order message, locations, extensions.
func graphqlErrorBody(errs []gqlError) []byte {
	type ext struct {
		Code string `json:"code"`
	}
	type item struct {
		Message    string     `json:"message"`
		Locations  []location `json:"locations,omitempty"`
		Extensions ext        `json:"extensions"`
	}
	type body struct {
		Data   *struct{} `json:"data"`
		Errors []item    `json:"errors"`
	}
	b := body{Errors: make([]item, 0, len(errs))}
	for _, e := range errs {
		b.Errors = append(b.Errors, item{Message: e.Message, Locations: e.Locations, Extensions: ext{Code: e.Code}})
	}
	return marshal(b)
}

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

// writeJSON writes a body with Content-Type and Content-Length.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	contract.WithContentLength.Write(w, status, body)
}
