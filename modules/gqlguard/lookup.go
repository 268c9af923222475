package gqlguard

import (
	"net/http"
	"strings"

	"github.com/civicgate/civicgate/modules/gqlguard/document"
	"github.com/civicgate/civicgate/modules/gqlguard/request"
	"github.com/civicgate/civicgate/modules/gqlguard/view"
)

// The request's document: its compiled form (the document step, cached
// here with the cache metrics), the refusals it carries and the operation
// the request names.

// lookupDocument returns the compiled document of req and settles the
// operation name: on the fast path the raw name is kept when it holds no
// escapes, and decoded (if scanBearer has not) when it does.
func (g *Guard) lookupDocument(req *request.Located, v *view.Compiled) *document.Doc {
	schemaHash, compiler := g.schema.Hash, g.compiler
	if v != nil {
		schemaHash, compiler = v.Schema.Hash, v.Compiler
	}
	text, escaped, ok := req.QueryText()
	if !ok {
		return g.lookup(schemaHash, compiler, req.Query())
	}
	return g.lookupRaw(schemaHash, compiler, text, escaped, req)
}

// lookup returns the compiled document from the cache, compiling (and
// caching) it on a miss. The key holds the hash of the schema (or view)
// compiled against, so a view's outcome is never another's.
func (g *Guard) lookup(schemaHash uint64, compiler *document.Compiler, query string) *document.Doc {
	key := g.cache.Key(schemaHash, query)
	if doc := g.cache.Get(key, query); doc != nil {
		g.metrics.cacheHits.Inc()
		return doc
	}
	return g.compileAndCache(compiler, key, query, query)
}

// lookupRaw is lookup for a request located in place: the cache key is the
// query text as it appears in the body (still JSON-escaped when escaped), so
// a hit decodes nothing.
func (g *Guard) lookupRaw(schemaHash uint64, compiler *document.Compiler, raw []byte, escaped bool, req *request.Located) *document.Doc {
	key := g.cache.KeyBytes(schemaHash, raw, escaped)
	if doc := g.cache.GetBytes(key, raw); doc != nil {
		g.metrics.cacheHits.Inc()
		return doc
	}
	text := string(raw)
	decoded := text
	if escaped {
		decoded = req.Query()
	}
	return g.compileAndCache(compiler, key, text, decoded)
}

func (g *Guard) compileAndCache(compiler *document.Compiler, key document.CacheKey, text, query string) *document.Doc {
	g.metrics.cacheMiss.Inc()
	doc := compiler.Compile(query)
	g.cache.Put(key, text, doc)
	return doc
}

// screenDocument refuses a document holding the bearer token in one of its
// strings (when the request has one), an operation mixing introspection the
// guard answers with other fields (introspection.go), or a document that
// failed to compile; it returns the outcome, or "" to go on.
func (g *Guard) screenDocument(w http.ResponseWriter, doc *document.Doc, scope *requestScope, req *request.Located) string {
	if scope.hasToken {
		for _, s := range doc.Strings {
			if strings.Contains(s, scope.token) {
				writeJSON(w, http.StatusBadRequest, messageBody(msgBearerInDocument))
				return outcomeBearer
			}
		}
	}
	if outcome := g.screenMixedIntrospection(w, doc, req, scope.view); outcome != "" {
		return outcome
	}
	if doc.Refusal != nil {
		writeJSON(w, http.StatusOK, doc.Refusal)
		return refusalOutcome(doc.RefusalKind)
	}
	return ""
}

// selectOperation picks the operation req names from doc, refusing an
// unknown or ambiguous name, anything but a query, and introspection when
// it is off, or when the caller's view is not the whole schema and the
// guard cannot answer it from the view (introspection.go); it returns the
// operation, or the refusal's outcome.
func (g *Guard) selectOperation(w http.ResponseWriter, doc *document.Doc, req *request.Located, scope *requestScope) (*document.Operation, string) {
	var (
		op  *document.Operation
		err error
	)
	if raw, name := req.OperationName(); raw != nil {
		op, err = doc.OperationBytes(raw)
	} else {
		op, err = doc.Operation(name)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, messageBody(err.Error()))
		return nil, outcomeBadRequest
	}
	if !g.allows(op.Kind) {
		writeJSON(w, http.StatusOK, document.ErrorBody([]document.Error{{
			Message: g.notAllowedMessage(op.Kind), Locations: document.LocationsOf(op.Pos), Code: codeOperationNotAllowed,
		}}))
		return nil, outcomeOperation
	}
	v := scope.view
	if op.Measures.Introspection != nil && (!*g.Introspection || (!v.Whole() && !(g.answersIntrospection(v) && answerableVia(scope.via)))) {
		writeJSON(w, http.StatusOK, document.ErrorBody([]document.Error{{
			Message: msgIntrospectionDisabled, Locations: document.LocationsOf(op.Measures.Introspection), Code: codeIntrospectionOff,
		}}))
		return nil, outcomeIntrospection
	}
	return op, ""
}

// refusalOutcome is the metrics outcome of a compiled document's refusal.
func refusalOutcome(kind document.Refusal) string {
	switch kind {
	case document.RefusedParse:
		return outcomeParseFailed
	case document.RefusedValidation:
		return outcomeValidationFailed
	}
	return outcomeLimit // too many tokens, too complex to validate
}
