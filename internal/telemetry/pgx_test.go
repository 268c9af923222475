package telemetry_test

import (
	"context"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/telemetry"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/internal/testkit/testotlp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestQueryTracer runs statements through a pool traced by NewQueryTracer on a real PostgreSQL: each one
// inside a span becomes a db.query child carrying the statement text and never an argument, a failure is an
// error status naming only the SQLSTATE, a batch is one span, COPY a db.copy span, and a statement outside
// any span makes none.
func TestQueryTracer(t *testing.T) {
	r := testotlp.Start(t)
	traceEnv(t, r)
	t.Setenv("RECORDSD_TRACING", "on")
	tp, flush := setup(t, "recordsd")

	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = telemetry.NewQueryTracer(tp)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	const secret = "s3cret-argument-value"

	if _, err := pool.Exec(ctx, `CREATE TABLE t (v text)`); err != nil { // outside any span
		t.Fatal(err)
	}
	sctx, root := tp.Tracer("t").Start(ctx, "request")
	if _, err := pool.Exec(sctx, `INSERT INTO t (v) VALUES ($1), ($1)`, secret); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(sctx, `SELECT $1::int`, "not-a-number-"+secret).Scan(&n); err == nil {
		t.Fatal("a bad cast did not fail")
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT count(*) FROM t WHERE v = $1`, secret)
	b.Queue(`SELECT 1`)
	if err := pool.SendBatch(sctx, b).Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.CopyFrom(sctx, pgx.Identifier{"t"}, []string{"v"}, pgx.CopyFromRows([][]any{{secret}})); err != nil {
		t.Fatal(err)
	}
	root.End()
	flush()

	spans := r.Spans()
	var reqID string
	var dbSpans []testotlp.Span
	for _, s := range spans {
		if s.Name == "request" {
			reqID = s.SpanID
		} else {
			dbSpans = append(dbSpans, s)
		}
		for k, v := range s.Attrs {
			if strings.Contains(v, secret) {
				t.Errorf("span %q attribute %s carries an argument value: %q", s.Name, k, v)
			}
		}
		if strings.Contains(s.StatusMessage, secret) {
			t.Errorf("span %q status carries an argument value: %q", s.Name, s.StatusMessage)
		}
	}
	if len(dbSpans) != 4 {
		t.Fatalf("want 4 db spans (insert, failed select, batch, copy) and no CREATE, got:\n%s", testotlp.Describe(spans))
	}
	for _, s := range dbSpans {
		if s.ParentSpanID != reqID || s.Attrs["db.system"] != "postgresql" || s.Kind != "client" {
			t.Errorf("db span not a postgresql client child of the request: %+v", s)
		}
	}
	ins, bad, batch, cp := dbSpans[0], dbSpans[1], dbSpans[2], dbSpans[3]
	if ins.Name != "db.query" || ins.Attrs["db.query.text"] != `INSERT INTO t (v) VALUES ($1), ($1)` || ins.Attrs["db.rows"] != "2" || ins.Status == "error" {
		t.Errorf("insert span: %+v", ins)
	}
	if bad.Name != "db.query" || bad.Status != "error" || bad.StatusMessage != "SQLSTATE 22P02" || bad.Attrs["db.response.status_code"] != "22P02" {
		t.Errorf("failed statement span: %+v", bad)
	}
	if batch.Name != "db.query" || batch.Attrs["db.operation.batch.size"] != "2" ||
		batch.Attrs["db.query.text"] != "SELECT count(*) FROM t WHERE v = $1;\nSELECT 1" {
		t.Errorf("batch span: %+v", batch)
	}
	if cp.Name != "db.copy" || cp.Attrs["db.collection.name"] != `"t"` || cp.Attrs["db.rows"] != "1" {
		t.Errorf("copy span: %+v", cp)
	}
}
