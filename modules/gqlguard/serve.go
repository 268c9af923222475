package gqlguard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/validator"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/credential"
)

// ServeHTTP checks the request; a request that passes continues to next with
// its original body bytes, a refused one is answered here (DESIGN §3.6).
func (g *Guard) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	body, outcome := g.check(w, r)
	g.metrics.requests.WithLabelValues(outcome).Inc()
	if outcome != outcomeAllowed {
		return nil
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return next.ServeHTTP(w, r)
}

// check returns the body and outcomeAllowed, or writes the refusal and
// returns its outcome.
func (g *Guard) check(w http.ResponseWriter, r *http.Request) (body []byte, outcome string) {
	defer func() {
		// A fault inside the parser or coercion must not leak: no stack,
		// no document, just the §3.6 500 body.
		if v := recover(); v != nil {
			g.logger.Error("graphql_guard internal error", zap.String("panic", fmt.Sprintf("%T", v)))
			writeJSON(w, http.StatusInternalServerError, errorBody(msgInternalServerError))
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
	body, err := io.ReadAll(io.LimitReader(r.Body, g.MaxBody+1))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, messageBody(msgBodyTooLarge))
			return nil, outcomeTooLarge
		}
		writeJSON(w, http.StatusBadRequest, messageBody(msgReadFailed))
		return nil, outcomeBadRequest
	}
	if int64(len(body)) > g.MaxBody {
		writeJSON(w, http.StatusRequestEntityTooLarge, messageBody(msgBodyTooLarge))
		return nil, outcomeTooLarge
	}
	req, err := decodeRequest(body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, messageBody(err.Error()))
		return nil, outcomeBadRequest
	}
	token, hasToken := credential.BearerFromRequest(r)
	if hasToken && (bytes.Contains(body, []byte(token)) || strings.Contains(req.Query, token) ||
		strings.Contains(req.OperationName, token) || containsInValue(req.Variables, token)) {
		writeJSON(w, http.StatusBadRequest, messageBody(msgBearerInDocument))
		return nil, outcomeBearer
	}

	doc := g.lookup(req.Query)
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
	op, err := doc.operation(req.OperationName)
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
	vars, err := validator.VariableValues(g.schema.schema, op.vars, req.Variables)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, messageBody(variableMessage(err)))
		return nil, outcomeBadRequest
	}

	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	families := g.families(op.measures.rootNames)
	if !g.entitled(repl, op.measures.rootNames) {
		writeJSON(w, http.StatusForbidden, errorBody(msgNotEntitled))
		return nil, outcomeNotEntitled
	}

	cost := op.measures.cost.evaluate(vars)
	if errs := g.violations(doc, op, cost); len(errs) > 0 {
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
		repl.Set("graphql.operation_name", op.name)
		repl.Set("graphql.families", families)
		repl.Set("graphql.cost", strconv.FormatInt(cost, 10))
	}
	return body, outcomeAllowed
}

// lookup returns the compiled document from the cache, compiling (and
// caching) it on a miss.
func (g *Guard) lookup(query string) *compiledDoc {
	key := g.cache.key(g.schema.hash, query)
	if doc := g.cache.get(key, query); doc != nil {
		g.metrics.cacheHits.Inc()
		return doc
	}
	g.metrics.cacheMiss.Inc()
	doc := g.compiler.compile(query)
	g.cache.put(key, doc)
	return doc
}

// families returns the comma-separated, sorted, distinct families of the
// root fields (fields outside every family are not named).
func (g *Guard) families(rootNames []string) string {
	var out []string
	for _, n := range rootNames {
		if f, ok := g.fieldFamily[n]; ok && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// entitled reports whether the caller owns every family the operation
// touches. With no families configured, an entitlement placeholder that is
// not set or nil (e.g. no civic_auth in front), or a multi-placeholder expression
// that resolves to empty, nothing is checked. A placeholder set to the
// empty string (a tier entitled to no family) owns nothing. A
// root field in no family is refused while checking: a field forgotten in
// the configuration must not bypass entitlements. Introspection fields
// belong to no family and are never refused here.
func (g *Guard) entitled(repl *caddy.Replacer, rootNames []string) bool {
	if len(g.fieldFamily) == 0 || repl == nil {
		return true
	}
	var owned string
	if g.entKey != "" {
		v, ok := repl.Get(g.entKey)
		if !ok || v == nil {
			return true
		}
		if s, isString := v.(string); isString {
			owned = s
		} else {
			owned = fmt.Sprint(v)
		}
	} else if owned = strings.TrimSpace(repl.ReplaceAll(g.Entitlements, "")); owned == "" {
		return true
	}
	for _, n := range rootNames {
		f, ok := g.fieldFamily[n]
		if !ok || !listContains(owned, f) {
			return false
		}
	}
	return true
}

// listContains reports whether the comma-separated list holds item.
func listContains(list, item string) bool {
	for list != "" {
		var part string
		part, list, _ = strings.Cut(list, ",")
		if strings.TrimSpace(part) == item {
			return true
		}
	}
	return false
}

// violations lists every limit the operation exceeds.
func (g *Guard) violations(doc *compiledDoc, op *compiledOp, cost int64) []gqlError {
	var errs []gqlError
	loc := locationsOf(op.pos)
	m := op.measures
	if doc.tokenOver != nil {
		errs = append(errs, gqlError{Message: tooManyTokensMessage(g.MaxTokens), Locations: locationsOf(doc.tokenOver), Code: codeTooManyTokens})
	}
	check := func(v, max int64, code, what string) {
		if v > max {
			errs = append(errs, gqlError{
				Message:   fmt.Sprintf("%s %s exceeds the maximum of %d", what, formatCount(v), max),
				Locations: loc, Code: code,
			})
		}
	}
	check(m.depth, g.MaxDepth, codeTooDeep, "Query depth")
	check(m.aliases, g.MaxAliases, codeTooManyAliases, "Alias count")
	check(m.rootFields, g.MaxRootFields, codeTooManyRootFields, "Root field count")
	check(m.directives, g.MaxDirectives, codeTooManyDirectives, "Directive count")
	check(cost, g.MaxCost, codeTooCostly, "Query cost")
	return errs
}

func formatCount(v int64) string {
	if v >= saturated {
		return "(overflowing)"
	}
	return strconv.FormatInt(v, 10)
}

func isJSONContentType(ct string) bool {
	if ct == "" {
		return false
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
