package gqlguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/gqlguard/document"
	"github.com/civicgate/civicgate/modules/gqlguard/introspect"
	"github.com/civicgate/civicgate/modules/gqlguard/request"
	"github.com/civicgate/civicgate/modules/gqlguard/view"
)

// Introspection answered from the caller's view (docs/design.md D68): on a
// route with schema_view entitled and introspection on, a caller whose view
// is not the whole schema has __schema and __type answered here from its
// view, never by the backend (which would answer from the whole schema). An
// operation mixing them with other root fields is refused before
// validation, so a data field outside the view is refused as one inside it.

const (
	codeIntrospectionMixed = "INTROSPECTION_MIXED"
	msgIntrospectionMixed  = "Introspection must be its own operation on this route"
)

// answersIntrospection reports whether the guard answers the introspection
// of a caller of view v: introspection is on and v is not the whole schema.
func (g *Guard) answersIntrospection(v *view.Compiled) bool {
	return *g.Introspection && !v.Whole() && v.Introspection != nil
}

// answerableVia reports whether a transport gets an introspection answer
// from the view: a plain HTTP answer (POST, GET, or a client that also
// accepts multipart/mixed). A WebSocket subscribe message or an event
// stream is refused as before (INTROSPECTION_DISABLED).
func answerableVia(via transport) bool {
	return via == viaPOST || via == viaGET || via == viaMultipart
}

// screenMixedIntrospection refuses, when the guard answers the caller's
// introspection, an operation selecting __schema or __type beside another
// root field (__typename aside), whether or not the document validates
// against the view. It returns the outcome, or "" to go on.
func (g *Guard) screenMixedIntrospection(w http.ResponseWriter, doc *document.Doc, req *request.Located, v *view.Compiled) string {
	if !g.answersIntrospection(v) || (doc.Refusal != nil && doc.RefusalKind != document.RefusedValidation) {
		return ""
	}
	if !mentionsIntrospection(doc) {
		return ""
	}
	parsed, err := parser.ParseQuery(&ast.Source{Input: doc.Query})
	if err != nil {
		return ""
	}
	op := operationNamed(parsed, requestOperationName(req))
	if op == nil {
		return "" // an unknown or ambiguous name: refused as before
	}
	pos, other := introspect.RootSelections(parsed, op)
	if pos == nil || !other {
		return ""
	}
	writeJSON(w, http.StatusOK, document.ErrorBody([]document.Error{{
		Message: msgIntrospectionMixed, Locations: document.LocationsOf(pos), Code: codeIntrospectionMixed,
	}}))
	return outcomeIntrospectionMixed
}

// mentionsIntrospection reports whether doc may select __schema or __type:
// for a valid document, whether an operation does (the analysis found it);
// for one that failed validation, whether its text names either (__typename,
// which many clients add everywhere, does not count). Only then is the text
// parsed again.
func mentionsIntrospection(doc *document.Doc) bool {
	if doc.Refusal == nil {
		for _, op := range doc.Ops {
			if op.Measures.Introspection != nil {
				return true
			}
		}
		return false
	}
	return namesWord(doc.Query, "__schema") || namesWord(doc.Query, "__type")
}

// namesWord reports whether text holds word not followed by a name
// character.
func namesWord(text, word string) bool {
	for {
		i := strings.Index(text, word)
		if i < 0 {
			return false
		}
		text = text[i+len(word):]
		if text == "" || !isNameByte(text[0]) {
			return true
		}
	}
}

func isNameByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// requestOperationName is the request's operationName, decoded.
func requestOperationName(req *request.Located) string {
	raw, name := req.OperationName()
	if raw != nil {
		return string(raw)
	}
	return name
}

// operationNamed is the operation of doc the name selects: the only one
// when name is empty; nil when none or several match.
func operationNamed(doc *ast.QueryDocument, name string) *ast.OperationDefinition {
	if name == "" {
		if len(doc.Operations) != 1 {
			return nil
		}
		return doc.Operations[0]
	}
	return doc.Operations.ForName(name)
}

// errIntrospectionAnswer: the view could not answer an operation that
// passed every check; the client gets the 500 body, the log no detail.
var errIntrospectionAnswer = errors.New("introspection answer failed")

// Bounds of an introspection answered from a view (docs/design.md D75),
// besides IntrospectionMaxDepth and the document limits every operation
// meets.
const (
	// maxIntrospectionLists bounds nested list fields (introspect.ListNesting):
	// an answer grows with the schema's size to this power.
	maxIntrospectionLists = 3
	// introspectionCost is what such an answer is charged: it reaches no
	// backend, and its work is bounded by the schema, not by list sizes.
	introspectionCost = 1
)

// answerFromView answers op, an introspection-only operation of doc that
// passed the policy, from view v: its "data", or the outcome of a refusal or
// a failure it wrote.
func (g *Guard) answerFromView(w http.ResponseWriter, v *view.Compiled, doc *document.Doc, op *document.Operation, req *request.Located) ([]byte, string) {
	parsed, err := parser.ParseQuery(&ast.Source{Input: doc.Query})
	var target *ast.OperationDefinition
	if err == nil {
		target = operationNamed(parsed, op.Name)
	}
	if target == nil {
		g.logger.Error("graphql_guard: " + errIntrospectionAnswer.Error())
		writeJSON(w, http.StatusInternalServerError, contract.BodyInternal)
		return nil, outcomeInternal
	}
	if n := introspect.ListNesting(parsed, target); n > maxIntrospectionLists {
		writeJSON(w, http.StatusOK, document.ErrorBody([]document.Error{{
			Message:   fmt.Sprintf("Introspection list nesting %d exceeds the maximum of %d", n, maxIntrospectionLists),
			Locations: document.LocationsOf(op.Pos), Code: codeTooDeep,
		}}))
		return nil, outcomeLimit
	}
	data, err := answerIntrospection(v, parsed, target, req)
	if err != nil {
		g.logger.Error("graphql_guard: " + err.Error())
		writeJSON(w, http.StatusInternalServerError, contract.BodyInternal)
		return nil, outcomeInternal
	}
	return data, ""
}

// answerIntrospection returns the "data" of target, an introspection-only
// operation of parsed, answered from view v with the request's variables.
func answerIntrospection(v *view.Compiled, parsed *ast.QueryDocument, target *ast.OperationDefinition, req *request.Located) ([]byte, error) {
	raw, vars, decoded := req.Variables()
	if !decoded && len(raw) > 0 {
		if err := json.Unmarshal(raw, &vars); err != nil {
			return nil, errIntrospectionAnswer
		}
	}
	data, err := v.Introspection.Execute(parsed, target, vars)
	if err != nil {
		return nil, errIntrospectionAnswer
	}
	return data, nil
}

// writeIntrospectionAnswer writes {"data":…} with status 200, as
// application/graphql-response+json to a client that accepts it (GraphQL
// over HTTP) and application/json otherwise.
func writeIntrospectionAnswer(w http.ResponseWriter, r *http.Request, data []byte) {
	body := make([]byte, 0, len(data)+9)
	body = append(append(append(body, `{"data":`...), data...), '}')
	if !acceptsGraphQLResponse(r.Header) {
		writeJSON(w, http.StatusOK, body)
		return
	}
	h := w.Header()
	h.Set("Content-Type", mediaGraphQLResponse)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
