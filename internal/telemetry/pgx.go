package telemetry

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Span and attribute names of SQL spans.
const (
	SpanDBQuery = "db.query" // one statement, or one batch (db.operation.batch.size), or one COPY (db.copy)
	SpanDBCopy  = "db.copy"

	AttrDBSystem    = attribute.Key("db.system")               // "postgresql"
	AttrDBQueryText = attribute.Key("db.query.text")           // the statement text; never an argument
	AttrDBRows      = attribute.Key("db.rows")                 // rows returned or touched
	AttrDBStatus    = attribute.Key("db.response.status_code") // the SQLSTATE of a failed statement
	AttrDBBatchSize = attribute.Key("db.operation.batch.size")
	AttrDBTable     = attribute.Key("db.collection.name") // COPY's table
)

var attrPostgres = AttrDBSystem.String("postgresql")

// QueryTracer makes a span for every statement, batch and COPY run inside a recording span (a traced request
// or sync run); a statement outside any sampled trace costs one context lookup and makes no span, so the
// pool's own statements never start traces of their own.
//
// A span carries the statement's text (recordsd's SQL is parameterized: values travel as arguments, which
// are never recorded), the rows it returned or touched, and on failure an error status whose description is
// only the SQLSTATE or "canceled"/"deadline exceeded": a PostgreSQL message can quote a value.
type QueryTracer struct {
	tracer trace.Tracer
}

// NewQueryTracer returns the tracer to set as pgx.ConnConfig.Tracer, or nil when tp is off (see Enabled), so
// an untraced process keeps pgx's tracer-free path. Its type is the interface so that nil stays nil.
func NewQueryTracer(tp trace.TracerProvider) pgx.QueryTracer {
	if !Enabled(tp) {
		return nil
	}
	return &QueryTracer{tracer: tp.Tracer("github.com/civicgate/civicgate/internal/telemetry/pgx")}
}

var (
	_ pgx.QueryTracer    = (*QueryTracer)(nil)
	_ pgx.BatchTracer    = (*QueryTracer)(nil)
	_ pgx.CopyFromTracer = (*QueryTracer)(nil)
)

// start begins a span named name under ctx's span if that one is recording, and returns the context holding
// it, marked as ours for the matching end; otherwise ctx itself.
func (t *QueryTracer) start(ctx context.Context, name string, attrs ...attribute.KeyValue) context.Context {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return context.WithValue(ctx, startedKey{}, span)
}

// startedKey holds the span a tracer call started, in the context it returned: TraceXEnd gets only that
// context and must end our span, never the caller's.
type startedKey struct{}

// endStarted ends the span start put in ctx, if any, with the rows the statement returned or touched.
func endStarted(ctx context.Context, rows int64, err error) {
	span, ok := ctx.Value(startedKey{}).(trace.Span)
	if !ok {
		return
	}
	if err != nil {
		setError(span, err)
	} else {
		span.SetAttributes(AttrDBRows.Int64(rows))
	}
	span.End()
}

// TraceQueryStart implements pgx.QueryTracer.
func (t *QueryTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return t.start(ctx, SpanDBQuery, attrPostgres, AttrDBQueryText.String(data.SQL))
}

// TraceQueryEnd implements pgx.QueryTracer.
func (t *QueryTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	endStarted(ctx, data.CommandTag.RowsAffected(), data.Err)
}

// batchState collects a batch's statements for its one span.
type batchState struct {
	sql  []string
	rows int64
}

type batchKey struct{}

// TraceBatchStart implements pgx.BatchTracer: one span for the whole batch.
func (t *QueryTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	size := 0
	if data.Batch != nil {
		size = data.Batch.Len()
	}
	next := t.start(ctx, SpanDBQuery, attrPostgres, AttrDBBatchSize.Int(size))
	if next == ctx {
		return ctx
	}
	return context.WithValue(next, batchKey{}, &batchState{})
}

// TraceBatchQuery implements pgx.BatchTracer: the statement's text joins the batch span's db.query.text.
func (t *QueryTracer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	b, ok := ctx.Value(batchKey{}).(*batchState)
	if !ok {
		return
	}
	b.sql = append(b.sql, data.SQL)
	b.rows += data.CommandTag.RowsAffected()
	if data.Err != nil {
		setError(trace.SpanFromContext(ctx), data.Err)
	}
}

// TraceBatchEnd implements pgx.BatchTracer.
func (t *QueryTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchEndData) {
	if b, ok := ctx.Value(batchKey{}).(*batchState); ok {
		trace.SpanFromContext(ctx).SetAttributes(AttrDBQueryText.String(strings.Join(b.sql, ";\n")))
		endStarted(ctx, b.rows, data.Err)
	}
}

// TraceCopyFromStart implements pgx.CopyFromTracer: a db.copy span naming the table (rows are not recorded).
func (t *QueryTracer) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceCopyFromStartData) context.Context {
	return t.start(ctx, SpanDBCopy, attrPostgres, AttrDBTable.String(data.TableName.Sanitize()))
}

// TraceCopyFromEnd implements pgx.CopyFromTracer.
func (t *QueryTracer) TraceCopyFromEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceCopyFromEndData) {
	endStarted(ctx, data.CommandTag.RowsAffected(), data.Err)
}

// setError marks span failed with a description that cannot carry data: the SQLSTATE for a PostgreSQL error
// (also as db.response.status_code), else whether the context ended, else just "error".
func setError(span trace.Span, err error) {
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr):
		span.SetAttributes(AttrDBStatus.String(pgErr.Code))
		span.SetStatus(codes.Error, "SQLSTATE "+pgErr.Code)
	case errors.Is(err, context.Canceled):
		span.SetStatus(codes.Error, "canceled")
	case errors.Is(err, context.DeadlineExceeded):
		span.SetStatus(codes.Error, "deadline exceeded")
	default:
		span.SetStatus(codes.Error, "error")
	}
}
