package gqlguard

import (
	"net/http"
	"strings"

	"github.com/civicgate/civicgate/modules/gqlguard/request"
)

// The request's document: its compiled form (cached), the refusals it
// carries and the operation the request names.

// lookupDocument returns the compiled document of req and settles the
// operation name: on the fast path the raw name is kept when it holds no
// escapes, and decoded (if scanBearer has not) when it does.
func (g *Guard) lookupDocument(req *request.Located) *compiledDoc {
	text, escaped, ok := req.QueryText()
	if !ok {
		return g.lookup(req.Query())
	}
	return g.lookupRaw(text, escaped, req)
}

// lookup returns the compiled document from the cache, compiling (and
// caching) it on a miss.
func (g *Guard) lookup(query string) *compiledDoc {
	key := g.cache.key(g.schema.hash, query)
	if doc := g.cache.get(key, query); doc != nil {
		g.metrics.cacheHits.Inc()
		return doc
	}
	return g.compileAndCache(key, query, query)
}

// lookupRaw is lookup for a request located in place: the cache key is the
// query text as it appears in the body (still JSON-escaped when escaped), so
// a hit decodes nothing.
func (g *Guard) lookupRaw(raw []byte, escaped bool, req *request.Located) *compiledDoc {
	key := g.cache.keyBytes(g.schema.hash, raw, escaped)
	if doc := g.cache.getBytes(key, raw); doc != nil {
		g.metrics.cacheHits.Inc()
		return doc
	}
	text := string(raw)
	decoded := text
	if escaped {
		decoded = req.Query()
	}
	return g.compileAndCache(key, text, decoded)
}

func (g *Guard) compileAndCache(key cacheKey, text, query string) *compiledDoc {
	g.metrics.cacheMiss.Inc()
	doc := g.compiler.compile(query)
	doc.trusted = g.manifest != nil && g.manifest.Contains(query)
	for _, op := range doc.ops {
		op.families = g.fieldFamily.Of(op.kind, op.measures.RootNames)
		op.familiesVal = strings.Join(op.families.List, ",")
	}
	g.cache.put(key, text, doc)
	return doc
}

// screenDocument refuses a document holding the bearer token in one of its
// strings (when the request has one) or one that failed to compile; it
// returns the outcome, or "" to go on.
func screenDocument(w http.ResponseWriter, doc *compiledDoc, token string, hasToken bool) string {
	if hasToken {
		for _, s := range doc.strings {
			if strings.Contains(s, token) {
				writeJSON(w, http.StatusBadRequest, messageBody(msgBearerInDocument))
				return outcomeBearer
			}
		}
	}
	if doc.refusal != nil {
		writeJSON(w, http.StatusOK, doc.refusal)
		return doc.refusalOutcome
	}
	return ""
}

// selectOperation picks the operation req names from doc, refusing an
// unknown or ambiguous name, anything but a query, and introspection when
// it is off; it returns the operation, or the refusal's outcome.
func (g *Guard) selectOperation(w http.ResponseWriter, doc *compiledDoc, req *request.Located) (*compiledOp, string) {
	var (
		op  *compiledOp
		err error
	)
	if raw, name := req.OperationName(); raw != nil {
		op, err = doc.operationBytes(raw)
	} else {
		op, err = doc.operation(name)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, messageBody(err.Error()))
		return nil, outcomeBadRequest
	}
	if !g.allows(op.kind) {
		writeJSON(w, http.StatusOK, graphqlErrorBody([]gqlError{{
			Message: g.notAllowedMessage(op.kind), Locations: locationsOf(op.pos), Code: codeOperationNotAllowed,
		}}))
		return nil, outcomeOperation
	}
	if !*g.Introspection && op.measures.Introspection != nil {
		writeJSON(w, http.StatusOK, graphqlErrorBody([]gqlError{{
			Message: msgIntrospectionDisabled, Locations: locationsOf(op.measures.Introspection), Code: codeIntrospectionOff,
		}}))
		return nil, outcomeIntrospection
	}
	return op, ""
}
