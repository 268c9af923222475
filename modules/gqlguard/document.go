package gqlguard

import (
	"net/http"
	"strings"
)

// The request's document: its compiled form (cached), the refusals it
// carries and the operation the request names.

// lookupDocument returns the compiled document of req and settles the
// operation name: on the fast path the raw name is kept when it holds no
// escapes, and decoded (if scanBearer has not) when it does.
func (g *Guard) lookupDocument(req *located) *compiledDoc {
	if !req.fast {
		return g.lookup(req.query)
	}
	var doc *compiledDoc
	if req.resolvedBy != "" {
		doc = g.lookup(req.query)
	} else {
		doc = g.lookupRaw(req.raw, req.query)
	}
	if req.raw.opEsc && req.opName == "" {
		var err error
		if req.opName, err = unquote(req.raw.opQuoted); err != nil {
			panic(err) // validJSON said it decodes
		}
	} else if !req.raw.opEsc {
		req.rawOp = req.raw.op
	}
	return doc
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

// lookupRaw is lookup for a located request: the cache key is the raw
// (JSON-escaped) query text, so a hit decodes nothing. decoded is the
// decoded query if the caller has it already.
func (g *Guard) lookupRaw(rq rawRequest, decoded string) *compiledDoc {
	key := g.cache.keyBytes(g.schema.hash, rq.query, rq.queryEsc)
	if doc := g.cache.getBytes(key, rq.query); doc != nil {
		g.metrics.cacheHits.Inc()
		return doc
	}
	text := string(rq.query)
	if !rq.queryEsc {
		decoded = text
	} else if decoded == "" {
		var err error
		if decoded, err = unquote(rq.queryQuoted); err != nil {
			panic(err) // validJSON said it decodes
		}
	}
	return g.compileAndCache(key, text, decoded)
}

func (g *Guard) compileAndCache(key cacheKey, text, query string) *compiledDoc {
	g.metrics.cacheMiss.Inc()
	doc := g.compiler.compile(query)
	doc.trusted = g.manifest != nil && g.manifest.Contains(query)
	for _, op := range doc.ops {
		op.families = g.familiesOf(op.kind, op.measures.rootNames)
		op.familiesVal = strings.Join(op.families.list, ",")
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
func (g *Guard) selectOperation(w http.ResponseWriter, doc *compiledDoc, req *located) (*compiledOp, string) {
	var (
		op  *compiledOp
		err error
	)
	if req.rawOp != nil {
		op, err = doc.operationBytes(req.rawOp)
	} else {
		op, err = doc.operation(req.opName)
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
	if !*g.Introspection && op.measures.introspection != nil {
		writeJSON(w, http.StatusOK, graphqlErrorBody([]gqlError{{
			Message: msgIntrospectionDisabled, Locations: locationsOf(op.measures.introspection), Code: codeIntrospectionOff,
		}}))
		return nil, outcomeIntrospection
	}
	return op, ""
}
