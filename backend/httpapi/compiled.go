package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/civicgate/civicgate/backend/readplan"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/civicgate/civicgate/internal/intscalar"
)

// The compiled read path (backend/readplan, docs/design.md D51). A document that parsed and validated once is
// kept, with its operation, in s.plans; the next request with the same text and operation name skips gqlgen's
// operation context and executor: its variables are coerced by the same gqlparser function, its plan writes the
// answer straight from the rows. Every request a plan does not cover — and every one gqlgen would answer with
// an error other than a server fault — goes the reference way, gqlgen's executor.

// Plan cache bounds: as many documents as gqlgen's own query cache, and at most this much query text.
const (
	planCacheEntries = 1000
	planCacheBytes   = 16 << 20
)

// Executor labels of recordsd_graphql_executions_total.
const (
	executorCompiled  = 0
	executorReference = 1
)

// serveCached answers the request from e, the cached entry of its document, when a plan covers it; false:
// nothing was written, the request goes the reference way (and is not compiled again).
func (s *Server) serveCached(ctx context.Context, w http.ResponseWriter, r *http.Request, media responseMedia, e *readplan.Entry, rawVars map[string]any) bool {
	op := e.Operation()
	vars, err := validator.VariableValues(s.schema, op, rawVars)
	if err != nil || intscalar.Variables(s.schema, op.VariableDefinitions, vars) != nil {
		return false
	}
	return s.serveCompiled(ctx, w, r, media, e, vars)
}

// serveCompiled runs e's plan for vars (coerced) if one covers the request; false: nothing was written and no
// query was made.
func (s *Server) serveCompiled(ctx context.Context, w http.ResponseWriter, r *http.Request, media responseMedia, e *readplan.Entry, vars map[string]any) bool {
	p := e.Plan(vars)
	if p == nil {
		return false
	}
	// The entitlement check of entitledOperation on the plan's root fields: a refusal is the reference
	// path's to write (and log).
	if claims := Claims(r.Context()); claims != nil {
		for _, f := range p.RootFields() {
			if family, ok := rootFamily(f); !ok || !claims.Entitled(family) {
				return false
			}
		}
	}
	x, ok := p.Prepare(s.cfg.Store, vars)
	if !ok {
		return false
	}
	defer x.Release()
	if ctx.Err() != nil { // as gqlgen's response handler: no answer for a request already over
		s.metrics.executions[executorCompiled].Inc()
		writeInternalError(w)
		return true
	}
	ctx, span := s.startOperationSpan(ctx, e.Operation())
	body, err := x.Run(ctx, s.cfg.Store, s.observeRoot)
	if errors.Is(err, readplan.ErrNotCovered) {
		// A value gqlgen answers with an error of its own (a NaN amount): nothing was written, the request is
		// the reference executor's (its root fields were timed and traced once already).
		if span != nil {
			span.End()
		}
		return false
	}
	s.metrics.executions[executorCompiled].Inc()
	if err != nil {
		if span != nil {
			span.SetAttributes(AttrErrorCount.Int(1))
			span.SetStatus(codes.Error, "graphql errors")
			span.End()
		}
		var fe *readplan.FaultError
		if errors.As(err, &fe) {
			s.logFault(ctx, "graphql resolver fault", fe.Err, "path", fe.Key)
		} else {
			s.logFault(ctx, "graphql resolver fault", err)
		}
		writeInternalError(w)
		return true
	}
	if span != nil {
		span.End()
	}
	writeGraphQL(w, media, http.StatusOK, body)
	return true
}

// startOperationSpan starts the graphql.operation span tracingExtension makes, when the request is traced
// and sampled; nil otherwise.
func (s *Server) startOperationSpan(ctx context.Context, op *ast.OperationDefinition) (context.Context, trace.Span) {
	if s.tracer == nil || !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, nil
	}
	attrs := make([]attribute.KeyValue, 0, 2)
	attrs = append(attrs, AttrOperationType.String(string(op.Operation)))
	if op.Name != "" {
		attrs = append(attrs, AttrOperationName.String(op.Name))
	}
	return s.tracer.Start(ctx, SpanOperation, trace.WithAttributes(attrs...))
}

// observeRoot times a compiled root field into recordsd_graphql_field_duration_seconds and, in a sampled
// request, makes its graphql.resolve span: what metricsExtension and tracingExtension do for gqlgen's.
func (s *Server) observeRoot(ctx context.Context, field string) (context.Context, func(failed bool)) {
	start := time.Now()
	obs, ok := s.metrics.fields[field]
	if !ok {
		obs = s.metrics.fields[otherField]
	}
	var span trace.Span
	if s.tracer != nil && trace.SpanFromContext(ctx).IsRecording() {
		ctx, span = s.tracer.Start(ctx, SpanResolvePrefix+"Query."+field, trace.WithAttributes(AttrFieldName.String(field)))
	}
	return ctx, func(failed bool) {
		outcome := 0
		if failed {
			outcome = 1
		}
		if span != nil {
			if failed {
				span.SetAttributes(AttrErrorCount.Int(1))
				span.SetStatus(codes.Error, "graphql errors")
			}
			span.End()
		}
		obs[outcome].Observe(time.Since(start).Seconds())
	}
}
