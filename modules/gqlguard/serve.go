package gqlguard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/validator"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/intscalar"
	"github.com/civicgate/civicgate/modules/contract"
)

// ServeHTTP checks the request; a request that passes continues to next with
// its original body bytes, a refused one is answered here (docs/api.md "Errors").
func (g *Guard) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	body, outcome := g.check(w, r)
	if outcome != outcomeAllowed {
		g.metrics.requests.WithLabelValues(outcome).Inc()
		return nil
	}
	g.metrics.allowed.Inc()
	rb := &replayBody{body: body}
	rb.Reset(body)
	r.Body = rb
	r.ContentLength = int64(len(body))
	setContentLength(r.Header, len(body))
	r.GetBody = rb.fresh
	return next.ServeHTTP(w, r)
}

// replayBody is the checked body handed on; fresh gives reverse_proxy a new
// reader for a retry.
type replayBody struct {
	bytes.Reader
	body []byte
}

func (b *replayBody) Close() error { return nil }

func (b *replayBody) fresh() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(b.body)), nil
}

// setContentLength sets the header to n unless it already says so.
func setContentLength(h http.Header, n int) {
	var buf [20]byte
	v := strconv.AppendInt(buf[:0], int64(n), 10)
	if cur := h["Content-Length"]; len(cur) == 1 && cur[0] == string(v) {
		return
	}
	h["Content-Length"] = []string{string(v)}
}

// readBody reads at most max+1 bytes of r's body into one buffer sized by
// Content-Length when it is known (io.ReadAll would grow it several times).
func readBody(r *http.Request, max int64) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	size := int64(512)
	if r.ContentLength >= 0 && r.ContentLength <= max {
		size = r.ContentLength + 1 // room to see EOF without growing
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		limit := min(int64(cap(buf)), max+1)
		n, err := r.Body.Read(buf[len(buf):limit])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max || err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// containsToken reports whether b holds token (without converting either).
func containsToken(b []byte, token string) bool {
	var stack [96]byte
	needle := stack[:0]
	if len(token) <= len(stack) {
		needle = append(needle, token...)
	} else {
		needle = []byte(token)
	}
	return bytes.Contains(b, needle)
}

// check returns the body and outcomeAllowed, or writes the refusal and
// returns its outcome.
func (g *Guard) check(w http.ResponseWriter, r *http.Request) (body []byte, outcome string) {
	defer func() {
		// A fault inside the parser or coercion must not leak: no stack,
		// no document, just the 500 body of docs/api.md "Errors".
		if v := recover(); v != nil {
			g.logger.Error("graphql_guard internal error", zap.String("panic", fmt.Sprintf("%T", v)))
			writeJSON(w, http.StatusInternalServerError, contract.BodyInternal)
			body, outcome = nil, outcomeInternal
		}
	}()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, messageBody(msgMethodNotAllowed))
		return nil, outcomeMethod
	}
	if !isJSONContentType(r.Header.Get("Content-Type")) {
		writeJSON(w, http.StatusUnsupportedMediaType, messageBody(msgUnsupportedMediaType))
		return nil, outcomeMediaType
	}
	if r.ContentLength > g.MaxBody {
		writeJSON(w, http.StatusRequestEntityTooLarge, messageBody(msgBodyTooLarge))
		return nil, outcomeTooLarge
	}
	body, err := readBody(r, g.MaxBody)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, messageBody(msgBodyTooLarge))
			return nil, outcomeTooLarge
		}
		// The server's read timeout (Caddy's servers/timeouts/read_body) ran
		// out while the client trickled its body: 408, not a malformed body.
		var netErr net.Error
		if errors.As(err, &netErr) && netErr.Timeout() {
			w.Header().Set("Connection", "close")
			writeJSON(w, http.StatusRequestTimeout, messageBody(msgBodyTimeout))
			return nil, outcomeBodyTimeout
		}
		writeJSON(w, http.StatusBadRequest, messageBody(msgReadFailed))
		return nil, outcomeBadRequest
	}
	if int64(len(body)) > g.MaxBody {
		writeJSON(w, http.StatusRequestEntityTooLarge, messageBody(msgBodyTooLarge))
		return nil, outcomeTooLarge
	}
	token, hasToken := contract.BearerFromRequest(r)

	// The usual body is located in place (scanRequest) and decoded only as
	// far as needed; anything unusual goes through decodeRequest.
	rq, fast := scanRequest(body)
	var (
		doc      *compiledDoc
		opName   string
		rawOp    []byte
		vars     map[string]any // decoded variables, when they had to be decoded
		haveVars bool
	)
	if fast {
		var query string // decoded, when the raw query holds escapes and is decoded
		if hasToken {
			bearer := containsToken(body, token)
			if !bearer && rq.queryEsc {
				if query, err = unquote(rq.queryQuoted); err != nil {
					panic(err) // json.Valid said it decodes
				}
				bearer = strings.Contains(query, token)
			}
			if !bearer && rq.opEsc {
				if opName, err = unquote(rq.opQuoted); err != nil {
					panic(err)
				}
				bearer = strings.Contains(opName, token)
			}
			if !bearer && rq.varsEsc {
				if vars, err = decodeVariables(rq.vars); err != nil {
					panic(err)
				}
				haveVars = true
				bearer = containsInValue(vars, token)
			}
			if bearer {
				writeJSON(w, http.StatusBadRequest, messageBody(msgBearerInDocument))
				return nil, outcomeBearer
			}
		}
		doc = g.lookupRaw(rq, query)
		if rq.opEsc && opName == "" {
			if opName, err = unquote(rq.opQuoted); err != nil {
				panic(err)
			}
		} else if !rq.opEsc {
			rawOp = rq.op
		}
	} else {
		req, err := decodeRequest(body)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, messageBody(err.Error()))
			return nil, outcomeBadRequest
		}
		if hasToken && (containsToken(body, token) || strings.Contains(req.Query, token) ||
			strings.Contains(req.OperationName, token) || containsInValue(req.Variables, token)) {
			writeJSON(w, http.StatusBadRequest, messageBody(msgBearerInDocument))
			return nil, outcomeBearer
		}
		doc = g.lookup(req.Query)
		opName, vars, haveVars = req.OperationName, req.Variables, true
	}
	if hasToken {
		for _, s := range doc.strings {
			if strings.Contains(s, token) {
				writeJSON(w, http.StatusBadRequest, messageBody(msgBearerInDocument))
				return nil, outcomeBearer
			}
		}
	}
	if doc.refusal != nil {
		writeJSON(w, http.StatusOK, doc.refusal)
		return nil, doc.refusalOutcome
	}
	var op *compiledOp
	if rawOp != nil {
		op, err = doc.operationBytes(rawOp)
	} else {
		op, err = doc.operation(opName)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, messageBody(err.Error()))
		return nil, outcomeBadRequest
	}
	if op.kind != ast.Query {
		writeJSON(w, http.StatusOK, graphqlErrorBody([]gqlError{{
			Message: msgOnlyQueriesAreAllowed, Locations: locationsOf(op.pos), Code: codeOperationNotAllowed,
		}}))
		return nil, outcomeOperation
	}
	if !*g.Introspection && op.measures.introspection != nil {
		writeJSON(w, http.StatusOK, graphqlErrorBody([]gqlError{{
			Message: msgIntrospectionDisabled, Locations: locationsOf(op.measures.introspection), Code: codeIntrospectionOff,
		}}))
		return nil, outcomeIntrospection
	}
	co, err := g.coerce(op, fast, rq.vars, vars, haveVars)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, messageBody(variableMessage(err)))
		return nil, outcomeBadRequest
	}

	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if !g.entitled(repl, op.measures.rootNames) {
		writeJSON(w, http.StatusForbidden, contract.BodyNotEntitled)
		return nil, outcomeNotEntitled
	}

	if g.overAny(doc, op, co.cost) {
		errs := g.violations(doc, op, co.cost)
		if !g.MeasureOnly {
			writeJSON(w, http.StatusOK, graphqlErrorBody(errs))
			return nil, outcomeLimit
		}
		for _, e := range errs {
			g.metrics.measured.WithLabelValues(e.Code).Inc()
			g.logger.Warn("graphql document over limit (measure_only)",
				zap.String("limit", e.Code), zap.String("detail", e.Message), zap.String("operation", op.name))
		}
	}

	if repl != nil {
		repl.Set(contract.GraphQLOperationName, op.nameVal)
		repl.Set(contract.GraphQLRootFields, op.rootFieldsVal)
		repl.Set(contract.GraphQLFamilies, op.familiesVal)
		repl.Set(contract.GraphQLCost, co.costVal)
	}
	return body, outcomeAllowed
}

// coerce coerces the request's variables for op and evaluates its cost. On
// the fast path the result is remembered per raw variables text (coercion
// and cost are pure functions of the operation and that text).
func (g *Guard) coerce(op *compiledOp, fast bool, raw []byte, vars map[string]any, haveVars bool) (coerced, error) {
	if fast {
		if c, ok := op.memo.get(raw); ok {
			return c, nil
		}
	}
	if !haveVars {
		var err error
		if vars, err = decodeVariables(raw); err != nil {
			return coerced{}, err
		}
	}
	coercedVars, err := validator.VariableValues(g.schema.schema, op.vars, vars)
	if err != nil {
		return coerced{}, err
	}
	if err := intscalar.Variables(g.schema.schema, op.vars.VariableDefinitions, coercedVars); err != nil {
		return coerced{}, err
	}
	cost := op.measures.cost.evaluate(coercedVars)
	c := coerced{cost: cost, costVal: strconv.FormatInt(cost, 10)}
	if fast {
		op.memo.put(raw, c)
	}
	return c, nil
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
			panic(err) // json.Valid said it decodes
		}
	}
	return g.compileAndCache(key, text, decoded)
}

func (g *Guard) compileAndCache(key cacheKey, text, query string) *compiledDoc {
	g.metrics.cacheMiss.Inc()
	doc := g.compiler.compile(query)
	for _, op := range doc.ops {
		op.familiesVal = g.families(op.measures.rootNames)
	}
	g.cache.put(key, text, doc)
	return doc
}

func isJSONContentType(ct string) bool {
	if ct == "" {
		return false
	}
	if ct == "application/json" { // the usual value, without parsing
		return true
	}
	media, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	if media != "application/json" && !(strings.HasPrefix(media, "application/") && strings.HasSuffix(media, "+json")) {
		return false
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return false
	}
	return true
}

// containsInValue reports whether token occurs in a decoded JSON value
// (string values and object keys, at any depth).
func containsInValue(v any, token string) bool {
	switch x := v.(type) {
	case string:
		return strings.Contains(x, token)
	case map[string]any:
		for k, e := range x {
			if strings.Contains(k, token) || containsInValue(e, token) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if containsInValue(e, token) {
				return true
			}
		}
	}
	return false
}

// variableMessage phrases a coercion error: `Variable "$n" …: <reason>`.
func variableMessage(err error) string {
	var ge *gqlerror.Error
	if !errors.As(err, &ge) {
		return "Variables are invalid"
	}
	name, at := "", ""
	if len(ge.Path) > 1 {
		name = fmt.Sprint(ge.Path[1])
		at = ge.Path.String()
	}
	if name == "" {
		return "Variables are invalid: " + ge.Message
	}
	return fmt.Sprintf("Variable \"$%s\" is invalid at %s: %s", name, at, ge.Message)
}
