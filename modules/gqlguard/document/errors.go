package document

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/civicgate/civicgate/modules/contract"
)

// extensions.code values of the refusals a compiled document carries.
const (
	codeParseFailed          = "GRAPHQL_PARSE_FAILED"
	codeValidationFailed     = "GRAPHQL_VALIDATION_FAILED"
	CodeTooManyTokens        = "TOO_MANY_TOKENS"
	codeTooComplexToValidate = "DOCUMENT_TOO_COMPLEX"
	msgTooComplexToValidate  = "Document is too complex to validate"
)

// TooManyTokensMessage is the refusal of a document over max tokens.
func TooManyTokensMessage(max int) string {
	return "Document exceeds the maximum of " + strconv.Itoa(max) + " tokens"
}

// Error is one GraphQL error of a refusal body.
type Error struct {
	Message   string
	Locations []Location
	Code      string
}

// Location is a line and column in the document.
type Location struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// LocationsOf is pos as an error's locations (none for nil).
func LocationsOf(pos *ast.Position) []Location {
	if pos == nil {
		return nil
	}
	return []Location{{Line: pos.Line, Column: pos.Column}}
}

func fromGQLErrors(list gqlerror.List, code string) []Error {
	out := make([]Error, 0, len(list))
	for _, e := range list {
		g := Error{Message: e.Message, Code: code}
		for _, l := range e.Locations {
			g.Locations = append(g.Locations, Location{Line: l.Line, Column: l.Column})
		}
		out = append(out, g)
	}
	return out
}

// ErrorBody renders the HTTP 200 GraphQL refusal {"data":null,"errors":[…]}
// with members in the order message, locations, extensions (docs/api.md
// "Errors").
func ErrorBody(errs []Error) []byte {
	type ext struct {
		Code string `json:"code"`
	}
	type item struct {
		Message    string     `json:"message"`
		Locations  []Location `json:"locations,omitempty"`
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
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(b); err != nil {
		return contract.BodyInternal
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
