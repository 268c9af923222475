package usageadmin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
	"github.com/civicgate/civicgate/modules/ratelimit/usagecmd"
)

type org string

func (o org) Org() string { return string(o) }

// TestAdminAnswers: the routes answer what the command answers, as JSON;
// bad questions are 400 with a message, an unknown organization 404, and
// no answer carries SQL or the DSN.
func TestAdminAnswers(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := keystore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if err := usage.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	op := &contract.GraphQLOperation{Type: "query", Name: "Books", DocumentHash: strings.Repeat("b", 64),
		Shape: &contract.OperationShape{Coordinates: []string{"Query.books"}, Normalized: "{books}",
			Deprecated: []string{"Query.books"}, DeprecationReasons: []string{"Use shelves."}}}
	m := usage.NewOperationMeter(0, 0)
	for range 2 {
		m.Add(&usage.OperationSample{KeyID: "key_a", Org: org("acme"), At: time.Now(), Operation: op})
	}
	ops, recs := m.Drain()
	if _, err := usage.WriteFlush(ctx, pool, usage.NewBatchID(), usage.Batch{Operations: ops, Records: recs}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DATABASE_URL", dsn)

	ask := func(method, target, body string) (int, string) {
		w := httptest.NewRecorder()
		err := serve(w, httptest.NewRequest(method, target, strings.NewReader(body)))
		var apiErr caddy.APIError
		if errors.As(err, &apiErr) {
			return apiErr.HTTPStatus, apiErr.Err.Error()
		}
		if err != nil {
			t.Fatal(err)
		}
		return http.StatusOK, w.Body.String()
	}

	code, body := ask("GET", Prefix+"operations?org=acme&since=2h", "")
	var a usagecmd.OperationsAnswer
	if err := json.Unmarshal([]byte(body), &a); code != 200 || err != nil || len(a.Operations) != 1 || a.Operations[0].Requests != 2 || a.Since != "2h0m0s" {
		t.Fatalf("operations: %d %s (%v)", code, body, err)
	}
	code, body = ask("GET", Prefix+"deprecated?org=acme", "")
	if code != 200 || !strings.Contains(body, `"coordinate":"Query.books","reason":"Use shelves.","requests":2`) {
		t.Fatalf("deprecated: %d %s", code, body)
	}
	code, body = ask("GET", Prefix+"coordinate?coordinate=Query.books", "")
	if code != 200 || !strings.Contains(body, `"key_id":"key_a","requests":2`) {
		t.Fatalf("coordinate: %d %s", code, body)
	}
	code, body = ask("POST", Prefix+"unused", "type Query { books: [String] shelves: Int }")
	if code != 200 || !strings.Contains(body, `"unused":["Query.shelves"]`) {
		t.Fatalf("unused: %d %s", code, body)
	}
	for _, c := range []struct {
		method, target, body string
		code                 int
		msg                  string
	}{
		{"GET", Prefix + "operations", "", 400, "needs an organization"},
		{"GET", Prefix + "operations?org=acme&org=other", "", 400, "given twice"},
		{"GET", Prefix + "operations?org=acme&variables=x", "", 400, `unknown parameter "variables"`},
		{"GET", Prefix + "fields?org=acme&since=forever", "", 400, "not a duration"},
		{"GET", Prefix + "coordinate?coordinate=books';--", "", 400, "is not Type.field"},
		{"GET", Prefix + "unused", "", 400, "unused takes POST"},
		{"POST", Prefix + "unused", "type Query {", 400, "schema"},
		{"GET", Prefix + "nothing", "", 400, "is not operations"},
		{"GET", Prefix + "operations?org=nobody", "", 404, `no organization "nobody"`},
	} {
		code, msg := ask(c.method, c.target, c.body)
		if code != c.code || !strings.Contains(msg, c.msg) || strings.Contains(msg, "SELECT") || strings.Contains(msg, dsn) {
			t.Errorf("%s %s: %d %q, want %d %q", c.method, c.target, code, msg, c.code, c.msg)
		}
	}
}
