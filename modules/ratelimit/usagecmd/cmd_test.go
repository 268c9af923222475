package usagecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

const testSchema = `
type Query { books(first: Int): [Book!]! author(id: ID!): Author }
type Book { title: String! isbn: String author: Author }
type Author { name: String! }
input BookFilter { title: String }
enum Genre { FICTION POETRY }
`

type org string

func (o org) Org() string { return string(o) }

// seeded writes, as a gateway's flush does, an hour ago: acme's key_a ran
// Books 3 times, key_b twice (one 500); globex's key_g ran Author once.
func seeded(t *testing.T) string {
	t.Helper()
	dsn := testenv.Postgres(t)
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ctx := context.Background()
	if err := keystore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if err := usage.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	books := &contract.GraphQLOperation{Type: "query", Name: "Books", DocumentHash: strings.Repeat("b", 64),
		Shape: &contract.OperationShape{Coordinates: []string{"Book.title", "Query.books", "Query.books(first:)"}, Normalized: "query Books{books(first:0){title}}",
			Deprecated: []string{"Book.title"}, DeprecationReasons: []string{"Use <b>name</b>."}}}
	author := &contract.GraphQLOperation{Type: "query", Name: "Author", DocumentHash: strings.Repeat("a", 64),
		Shape: &contract.OperationShape{Coordinates: []string{"Author.name", "Query.author", "Query.author(id:)"}, Normalized: `query Author{author(id:""){name}}`}}
	m := usage.NewOperationMeter(0, 0)
	at := time.Now().Add(-time.Hour)
	for i, s := range []struct {
		key, org string
		op       *contract.GraphQLOperation
	}{{"key_a", "acme", books}, {"key_a", "acme", books}, {"key_a", "acme", books}, {"key_b", "acme", books}, {"key_b", "acme", books}, {"key_g", "globex", author}} {
		m.Add(&usage.OperationSample{KeyID: s.key, Org: org(s.org), At: at, Operation: s.op, Error: i == 4, Latency: 5 * time.Millisecond})
	}
	ops, recs := m.Drain()
	if _, err := usage.WriteFlush(ctx, pool, usage.NewBatchID(), usage.Batch{Operations: ops, Records: recs}); err != nil {
		t.Fatal(err)
	}
	return dsn
}

// run runs the command with DATABASE_URL dsn and returns its exit code and
// output.
func run(dsn string, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, &out, &errOut, func(k string) string {
		if k == "DATABASE_URL" {
			return dsn
		}
		return ""
	})
	return code, out.String(), errOut.String()
}

func TestUsageCLI(t *testing.T) {
	dsn := seeded(t)

	t.Run("operations table", func(t *testing.T) {
		code, out, errOut := run(dsn, "operations", "--org", "acme")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 3 {
			t.Fatalf("exit %d, stderr %q, out:\n%s", code, errOut, out)
		}
		if f := strings.Fields(lines[1]); f[0] != "key_a" || f[2] != "Books" || f[3] != "bbbbbbbbbbbb" || f[4] != "3" || f[5] != "0" || f[7] != "8ms" {
			t.Fatalf("first row %q", lines[1])
		}
		if f := strings.Fields(lines[2]); f[0] != "key_b" || f[4] != "2" || f[5] != "1" {
			t.Fatalf("second row %q", lines[2])
		}
	})

	t.Run("operations json, one key", func(t *testing.T) {
		code, out, _ := run(dsn, "operations", "--org", "acme", "--key", "key_b", "--json")
		var a OperationsAnswer
		if err := json.Unmarshal([]byte(out), &a); code != 0 || err != nil {
			t.Fatalf("exit %d, %v:\n%s", code, err, out)
		}
		if len(a.Operations) != 1 || a.Operations[0].KeyID != "key_b" || a.Operations[0].Hash != strings.Repeat("b", 64) || a.Operations[0].P95ms != 8 {
			t.Fatalf("answer %+v", a)
		}
		if !strings.Contains(out, `"p50_ms": 8`) || !strings.Contains(out, `"last_seen": "`) {
			t.Fatalf("json:\n%s", out)
		}
	})

	t.Run("deprecated: the organization's own, the reason quoted", func(t *testing.T) {
		code, out, errOut := run(dsn, "deprecated", "--org", "acme")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[1], "Book.title") || !strings.Contains(lines[1], `"Use <b>name</b>."`) {
			t.Fatalf("exit %d, stderr %q, out:\n%s", code, errOut, out)
		}
		if f := strings.Fields(lines[1]); f[1] != "5" || f[2] != "2" || f[3] != "Books" {
			t.Fatalf("row %q", lines[1])
		}
		code, out, _ = run(dsn, "deprecated", "--org", "globex", "--json")
		var a DeprecatedAnswer
		if err := json.Unmarshal([]byte(out), &a); code != 0 || err != nil || a.Org != "globex" || len(a.Deprecated) != 0 {
			t.Fatalf("globex: exit %d, %v:\n%s", code, err, out)
		}
		if code, _, errOut := run(dsn, "deprecated", "--org", "acme", "--key", "key_a"); code != 2 || !strings.Contains(errOut, "deprecated takes no key") {
			t.Fatalf("with a key: exit %d, %s", code, errOut)
		}
	})

	t.Run("fields: only the organization's own", func(t *testing.T) {
		code, out, _ := run(dsn, "fields", "--org", "acme", "--json")
		var a FieldsAnswer
		if err := json.Unmarshal([]byte(out), &a); code != 0 || err != nil {
			t.Fatalf("exit %d, %v:\n%s", code, err, out)
		}
		var got []string
		for _, f := range a.Fields {
			got = append(got, f.Coordinate)
			if f.Requests != 5 || f.Operations != 1 {
				t.Fatalf("field %+v", f)
			}
		}
		if !slices.Equal(got, []string{"Book.title", "Query.books", "Query.books(first:)"}) {
			t.Fatalf("fields %v", got)
		}
	})

	t.Run("coordinate", func(t *testing.T) {
		code, out, _ := run(dsn, "coordinate", "Query.author", "--since", "7d")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 2 || strings.Join(strings.Fields(lines[1])[:3], " ") != "globex key_g 1" {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})

	t.Run("unused", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "schema.graphqls")
		if err := os.WriteFile(file, []byte(testSchema), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := run(dsn, "unused", "--schema", file, "--json")
		var a UnusedAnswer
		if err := json.Unmarshal([]byte(out), &a); code != 0 || err != nil {
			t.Fatalf("exit %d, %v, %s:\n%s", code, err, errOut, out)
		}
		want := []string{"Book.author", "Book.isbn", "BookFilter.title", "Genre.FICTION", "Genre.POETRY"}
		if !slices.Equal(a.Unused, want) || a.Schema != 11 {
			t.Fatalf("unused %v of %d, want %v of 11", a.Unused, a.Schema, want)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			code int
			msg  string
		}{
			{[]string{"operations"}, 2, "needs an organization"},
			{[]string{"operations", "--org", "acme", "--since", "soon"}, 2, "not a duration"},
			{[]string{"coordinate", "Query"}, 2, "is not Type.field"},
			{[]string{"coordinate"}, 2, "takes one Type.field"},
			{[]string{"unused"}, 2, "needs --schema"},
			{[]string{"whatever", "--org", "acme"}, 2, "is not operations, fields"},
			{[]string{"operations", "--org", "nobody"}, 1, `no organization "nobody"`},
			{[]string{"operations", "--bogus"}, 2, "flag provided but not defined"},
		} {
			code, _, errOut := run(dsn, c.args...)
			if code != c.code || !strings.Contains(errOut, c.msg) {
				t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errOut, c.code, c.msg)
			}
		}
		if code, _, errOut := run("", "operations", "--org", "acme"); code != 1 || !strings.Contains(errOut, "DATABASE_URL is not set") {
			t.Errorf("without a database: %d %q", code, errOut)
		}
	})
}

func TestSchemaCoordinates(t *testing.T) {
	got, err := SchemaCoordinates("s", testSchema)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Author.name", "Book.author", "Book.isbn", "Book.title", "BookFilter.title", "Genre.FICTION", "Genre.POETRY",
		"Query.author", "Query.author(id:)", "Query.books", "Query.books(first:)"}
	if !slices.Equal(got, want) {
		t.Fatalf("%v\nwant %v", got, want)
	}
	if _, err := SchemaCoordinates("s", "type Query {"); err == nil {
		t.Fatal("a broken schema parsed")
	}
}
