package gqlguard

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
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
	msgBodyTooLarge          = "Request body too large"
	msgBearerInDocument      = "Request must not contain the bearer token"
	msgNotEntitled           = "Tier not entitled to this endpoint family"
	msgInternalServerError   = "Internal Server Error"
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

// messageBody renders {"errors":[{"message":msg}]} (the 4xx request errors).
func messageBody(msg string) []byte {
	type item struct {
		Message string `json:"message"`
	}
	return marshal(struct {
		Errors []item `json:"errors"`
	}{Errors: []item{{Message: msg}}})
}

// errorBody renders {"error":msg} (403 and 500, DESIGN §3.6).
func errorBody(msg string) []byte {
	return marshal(struct {
		Error string `json:"error"`
	}{Error: msg})
}

func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte(`{"error":"Internal Server Error"}`)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
