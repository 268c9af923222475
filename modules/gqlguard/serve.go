package gqlguard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/vektah/gqlparser/v2/ast"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/gqlguard/document"
	"github.com/civicgate/civicgate/modules/gqlguard/request"
	"github.com/civicgate/civicgate/modules/gqlguard/subscribe"
	"github.com/civicgate/civicgate/modules/gqlguard/variables"
)

// ServeHTTP checks the request; a request that passes continues to next with
// its original body bytes (or, for a persisted document sent by hash, the
// body with the document's text), a refused one is answered here
// (docs/api.md "Errors"). A WebSocket upgrade is checked message by message
// (package subscribe).
func (g *Guard) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if subscribe.IsUpgrade(r) && g.allows(ast.Subscription) {
		return g.subs.ServeWebSocket(w, r, next)
	}
	out := w
	var gr *graphqlResponseWriter
	if acceptsGraphQLResponse(r.Header) {
		gr = &graphqlResponseWriter{w: w}
		out = gr
	}
	span := startGuardSpan(r.Context())
	adm, outcome := g.check(out, r)
	endGuardSpan(span, &adm, outcome)
	if outcome != outcomeAllowed {
		if gr != nil {
			gr.finish()
		}
		g.metrics.requests.WithLabelValues(outcome).Inc()
		return nil
	}
	if adm.answer != nil {
		writeIntrospectionAnswer(w, r, adm.answer)
		g.metrics.requests.WithLabelValues(outcomeIntrospectionAnswered).Inc()
		return nil
	}
	if adm.query != nil {
		r.URL.RawQuery = adm.query.Encode()
		r.RequestURI = r.URL.RequestURI()
	}
	if r.Method != http.MethodGet {
		body := adm.body
		rb := &replayBody{body: body}
		rb.Reset(body)
		r.Body = rb
		r.ContentLength = int64(len(body))
		setContentLength(r.Header, len(body))
		r.GetBody = rb.fresh
	}
	// An operation using a deprecated coordinate says so in its response:
	// set here, before the upstream's headers are added to the same map
	// (docs/design.md D69).
	adm.op.Deprecation.Set(w.Header())
	// The decoded request, for the handlers after the guard: a response
	// cache keys by it instead of parsing the request again (D40), usage
	// records its operation's shape (D69) — an event stream's too.
	r, q := contract.AttachRequest(r)
	q.SetGraphQL(adm.request)
	if adm.via == viaEventStream {
		return g.subs.ServeEventStream(w, r, next, g.eventStream(&adm))
	}
	g.metrics.allowed.Inc()
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

// check returns what was admitted and outcomeAllowed, or writes the refusal
// and returns its outcome. Each step writes its own refusal and returns its
// outcome, or "" to go on.
func (g *Guard) check(w http.ResponseWriter, r *http.Request) (adm admitted, outcome string) {
	defer func() {
		// A fault inside the parser or coercion must not leak: no stack,
		// no document, just the 500 body of docs/api.md "Errors".
		if v := recover(); v != nil {
			g.logger.Error("graphql_guard internal error", zap.String("panic", fmt.Sprintf("%T", v)))
			writeJSON(w, http.StatusInternalServerError, contract.BodyInternal)
			adm, outcome = admitted{}, outcomeInternal
		}
	}()
	var (
		body []byte
		req  request.Located
	)
	if r.Method == http.MethodGet && g.allowGET {
		if req, outcome = locateURLQuery(w, r.URL.RawQuery); outcome != "" {
			return adm, outcome
		}
	} else {
		if outcome = g.checkMethodAndType(w, r); outcome != "" {
			return adm, outcome
		}
		if err := request.CheckURLNames(r.URL.RawQuery); err != nil { // a POST's URL: docs/design.md D64
			writeJSON(w, http.StatusBadRequest, messageBody(err.Error()))
			return adm, outcomeBadRequest
		}
		if body, outcome = g.readBodyChecked(w, r); outcome != "" {
			return adm, outcome
		}
		if req, outcome = locateBody(w, body); outcome != "" {
			return adm, outcome
		}
	}
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	scope := g.scopeOf(r, repl)
	adm, outcome = g.checkLocated(w, &scope, body, &req)
	if outcome != "" {
		return adm, outcome
	}
	// The last check: the cost budget. An event stream spends once its
	// subscription slot is held (subscribe.Shell.ServeEventStream).
	if adm.via != viaEventStream {
		if outcome = g.chargeCost(scope.ctx, w, scope.budget, adm.op, adm.co.Cost); outcome != "" {
			return admitted{}, outcome
		}
	}
	if r.Method == http.MethodGet && req.ResolvedBy() != "" {
		adm.query = r.URL.Query()
		adm.query.Set("query", req.Query())
	}
	exportPlaceholders(repl, adm.op, adm.co)
	adm.request = req.Published(r)
	adm.request.Operation = adm.op.Published
	if r.Method == http.MethodGet && adm.via == viaEventStream && g.subs.Terminates() {
		// A terminated GET stream subscribes upstream with the request as
		// a POST body would carry it, from the same decoded request.
		adm.body = subscribePayload(req.Query(), adm.request.OperationName, adm.request.Variables)
	}
	return adm, outcomeAllowed
}

// subscribePayload is the graphql-transport-ws subscribe payload of a
// request: its document, operation name and variables (raw JSON the guard
// has coerced), as {"query":…,"operationName":…,"variables":…}.
func subscribePayload(query string, operationName, variables []byte) []byte {
	q, _ := json.Marshal(query) // a string always marshals
	b := append([]byte(`{"query":`), q...)
	if operationName != nil {
		name, _ := json.Marshal(string(operationName))
		b = append(append(b, `,"operationName":`...), name...)
	}
	if len(variables) > 0 && string(variables) != "null" {
		b = append(append(b, `,"variables":`...), variables...)
	}
	return append(b, '}')
}

// locateBody locates the members of a POST body or a subscribe payload,
// refusing one that does not decode as a request (400); it returns the
// outcome, or "" to go on.
func locateBody(w http.ResponseWriter, body []byte) (request.Located, string) {
	req, err := request.Locate(body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, messageBody(err.Error()))
		return req, outcomeBadRequest
	}
	return req, ""
}

// locateURLQuery reads a GET request's members from its URL query,
// refusing a query that holds no request (400); it returns the outcome, or
// "" to go on.
func locateURLQuery(w http.ResponseWriter, rawQuery string) (request.Located, string) {
	req, err := request.FromURLQuery(rawQuery)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, messageBody(err.Error()))
		return req, outcomeBadRequest
	}
	return req, ""
}

// admitted is what a check lets through: the body to forward (nil for GET),
// the rewritten URL query of a GET whose document was resolved by hash,
// the operation and its coerced cost.
type admitted struct {
	body  []byte
	query url.Values
	op    *document.Operation
	co    variables.Coerced
	via   transport
	keyID string
	// request is the request as decoded, published to later handlers.
	request contract.GraphQLRequest
	// answer is the "data" of an introspection the guard answers from the
	// caller's view instead of forwarding (introspection.go).
	answer []byte
}

// checkLocated runs every check after the request's members are located:
// the bearer token scan, persisted documents, the document, the operation,
// the transport, trusted documents, variables and the policy. body is the
// raw request (the POST body, a subscribe payload; nil for GET).
func (g *Guard) checkLocated(w http.ResponseWriter, scope *requestScope, body []byte, req *request.Located) (admitted, string) {
	if scope.hasToken && req.ContainsBearer(body, scope.token) {
		writeJSON(w, http.StatusBadRequest, messageBody(msgBearerInDocument))
		return admitted{}, outcomeBearer
	}
	reg, outcome := g.resolvePersisted(w, scope, req)
	if outcome != "" {
		return admitted{}, outcome
	}
	doc := g.lookupDocument(req, scope.view)
	if outcome = g.screenDocument(w, doc, scope, req); outcome != "" {
		return admitted{}, outcome
	}
	op, outcome := g.selectOperation(w, doc, req, scope)
	if outcome != "" {
		return admitted{}, outcome
	}
	if outcome = g.checkTransport(w, scope, op); outcome != "" {
		return admitted{}, outcome
	}
	if outcome = g.checkTrusted(w, scope, doc, req); outcome != "" {
		return admitted{}, outcome
	}
	co, outcome := coerceVariables(w, op, req)
	if outcome != "" {
		return admitted{}, outcome
	}
	// An introspection answered here from the view, never forwarded, has
	// bounds of its own and costs one point (introspection.go, D75).
	here := op.Measures.Introspection != nil && !scope.view.Whole()
	maxDepth := g.MaxDepth
	if here {
		maxDepth, co.Cost = g.IntrospectionMaxDepth, introspectionCost
	}
	if outcome = g.applyPolicy(w, scope, doc, op, co.Cost, maxDepth); outcome != "" {
		return admitted{}, outcome
	}
	if here {
		data, outcome := g.answerFromView(w, scope.view, doc, op, req)
		if outcome != "" {
			return admitted{}, outcome
		}
		g.registerPersisted(scope, reg, doc)
		return admitted{op: op, co: co, via: scope.via, keyID: scope.keyID, answer: data}, ""
	}
	g.registerPersisted(scope, reg, doc)
	fwd := body
	if req.ResolvedBy() != "" && body != nil {
		fwd = forwardBody(body, req, doc)
	}
	return admitted{body: fwd, op: op, co: co, via: scope.via, keyID: scope.keyID}, ""
}

// applyPolicy refuses an operation the caller is not entitled to (403) or
// one over a document limit; under measure_only an over-limit operation is
// counted and logged and goes on. It returns the outcome, or "" to go on.
func (g *Guard) applyPolicy(w http.ResponseWriter, scope *requestScope, doc *document.Doc, op *document.Operation, cost, maxDepth int64) string {
	if !op.Families.Entitled(scope.owned, scope.checkOwned) {
		writeNotEntitled(w, op.Families.Refused(scope.owned))
		return outcomeNotEntitled
	}
	if !g.overAny(doc, op, cost, maxDepth) {
		return ""
	}
	errs := g.violations(doc, op, cost, maxDepth)
	if !g.MeasureOnly {
		writeJSON(w, http.StatusOK, document.ErrorBody(errs))
		return outcomeLimit
	}
	for _, e := range errs {
		g.metrics.measured.WithLabelValues(e.Code).Inc()
		g.logger.Warn("graphql document over limit (measure_only)",
			zap.String("limit", e.Code), zap.String("detail", e.Message), zap.String("operation", op.Name))
	}
	return ""
}

// coerceVariables coerces req's variables for op and evaluates its cost,
// refusing variables that do not coerce (400); it returns the result, or
// the refusal's outcome.
func coerceVariables(w http.ResponseWriter, op *document.Operation, req *request.Located) (variables.Coerced, string) {
	raw, vars, decoded := req.Variables()
	co, err := op.Variables.Coerce(req.Fast(), raw, vars, decoded)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, messageBody(variables.Message(err)))
		return variables.Coerced{}, outcomeBadRequest
	}
	return co, ""
}

// exportPlaceholders projects the admitted operation onto modules/contract's
// GraphQL placeholders, for Caddyfiles and logs; handlers read it typed
// (contract.GraphQLRequest.Operation, docs/design.md D61).
func exportPlaceholders(repl *caddy.Replacer, op *document.Operation, co variables.Coerced) {
	if repl == nil {
		return
	}
	repl.Map(op.Placeholders) // name, type, root fields, families: compiledOp.placeholder
	repl.Set(contract.GraphQLCost, co.CostValue)
}
