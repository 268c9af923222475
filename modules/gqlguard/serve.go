package gqlguard

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

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

// check returns the body and outcomeAllowed, or writes the refusal and
// returns its outcome. Each step writes its own refusal and returns its
// outcome, or "" to go on.
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
	if outcome = checkMethodAndType(w, r); outcome != "" {
		return nil, outcome
	}
	if body, outcome = g.readBodyChecked(w, r); outcome != "" {
		return nil, outcome
	}
	token, hasToken := contract.BearerFromRequest(r)
	req, outcome := locateRequest(w, body)
	if outcome != "" {
		return nil, outcome
	}
	if hasToken {
		if outcome = scanBearer(w, body, &req, token); outcome != "" {
			return nil, outcome
		}
	}
	doc := g.lookupDocument(&req)
	if outcome = screenDocument(w, doc, token, hasToken); outcome != "" {
		return nil, outcome
	}
	op, outcome := g.selectOperation(w, doc, &req)
	if outcome != "" {
		return nil, outcome
	}
	co, outcome := g.coerceVariables(w, op, &req)
	if outcome != "" {
		return nil, outcome
	}
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if outcome = g.applyPolicy(w, repl, doc, op, co.cost); outcome != "" {
		return nil, outcome
	}
	exportPlaceholders(repl, op, co)
	return body, outcomeAllowed
}

// applyPolicy refuses an operation the caller is not entitled to (403) or
// one over a document limit; under measure_only an over-limit operation is
// counted and logged and goes on. It returns the outcome, or "" to go on.
func (g *Guard) applyPolicy(w http.ResponseWriter, repl *caddy.Replacer, doc *compiledDoc, op *compiledOp, cost int64) string {
	if !g.entitled(repl, op.measures.rootNames) {
		writeJSON(w, http.StatusForbidden, contract.BodyNotEntitled)
		return outcomeNotEntitled
	}
	if !g.overAny(doc, op, cost) {
		return ""
	}
	errs := g.violations(doc, op, cost)
	if !g.MeasureOnly {
		writeJSON(w, http.StatusOK, graphqlErrorBody(errs))
		return outcomeLimit
	}
	for _, e := range errs {
		g.metrics.measured.WithLabelValues(e.Code).Inc()
		g.logger.Warn("graphql document over limit (measure_only)",
			zap.String("limit", e.Code), zap.String("detail", e.Message), zap.String("operation", op.name))
	}
	return ""
}

// exportPlaceholders hands the admitted operation to later handlers
// (modules/contract's GraphQL placeholders).
func exportPlaceholders(repl *caddy.Replacer, op *compiledOp, co coerced) {
	if repl == nil {
		return
	}
	repl.Set(contract.GraphQLOperationName, op.nameVal)
	repl.Set(contract.GraphQLRootFields, op.rootFieldsVal)
	repl.Set(contract.GraphQLFamilies, op.familiesVal)
	repl.Set(contract.GraphQLCost, co.costVal)
}
