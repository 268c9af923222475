package schemacheck

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

	"github.com/civicgate/civicgate/modules/gqlguard/document"
)

// current is the schema the operations were recorded against (the guard's
// testdata); candidate drops Query.oldBooks and the enum value TITLE and
// makes books(first:) a String.
const currentSchema = "../testdata/deprecated.graphqls"

const candidateSDL = `
type Query {
  books(filter: BookFilter, order: BookOrder, first: String, limit: Int): [Book!]!
  book(id: ID!): Book
}
input BookFilter { title: String name: String }
enum BookOrder { NEWEST OLDEST }
type Book { id: ID! title: String! }
type Subscription { bookAdded: Book! }
`

var seen = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// recorded compiles each document as the guard does and records its
// normalized text with the keys that sent it.
func recorded(t *testing.T) []Operation {
	t.Helper()
	schema, err := document.LoadSchema(currentSchema)
	if err != nil {
		t.Fatal(err)
	}
	c := document.NewCompiler(document.Config{Schema: schema, MaxTokens: 5000, LimitArgument: "limit", DefaultListSize: 25})
	key := func(org, id string, n int64) Key { return Key{OrgID: org, KeyID: id, Count: n, LastSeen: seen} }
	var ops []Operation
	for _, r := range []struct {
		hash, query string
		keys        []Key
	}{
		{"a-old", `query Old { oldBooks { id title } }`, []Key{key("org1", "k1", 10), key("org2", "k3", 2)}},
		{"b-first", `query First { books(first: 5) { id } }`, []Key{key("org1", "k2", 7)}},
		{"c-book", `query One { book(id: "secret-id") { title } }`, []Key{key("org1", "k1", 3)}},
		{"d-var", `query ByOrder($o: BookOrder) { books(order: $o) { id } }`, []Key{key("org2", "k3", 1)}},
		{"e-title", `{ books(order: TITLE) { id } }`, []Key{key("org2", "k4", 4)}},
	} {
		doc := c.Compile(r.query)
		if doc.Refusal != nil {
			t.Fatalf("%s: %s", r.hash, doc.Refusal)
		}
		op := doc.Ops[0]
		ops = append(ops, Operation{Hash: r.hash, Name: op.Name, Type: string(op.Kind), Normalized: op.Published.Shape.Normalized, Keys: r.keys})
	}
	return ops
}

func loadCandidate(t *testing.T) *document.Schema {
	t.Helper()
	s, err := document.ParseSchema("candidate.graphqls", candidateSDL)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A candidate that drops a used field, an enum value and changes an
// argument's type lists exactly the operations that used them, and the
// keys that sent those; an operation passing its value in a variable is
// not one of them (variables are never recorded).
func TestCheckListsExactlyTheBrokenOperations(t *testing.T) {
	breaks := Check(loadCandidate(t).AST, recorded(t))
	var hashes []string
	for _, b := range breaks {
		hashes = append(hashes, b.Operation.Hash)
	}
	if !slices.Equal(hashes, []string{"a-old", "b-first", "e-title"}) {
		t.Fatalf("broken operations %q", hashes)
	}
	want := map[string]string{
		"a-old":   `Cannot query field "oldBooks" on type "Query".`,
		"b-first": `String cannot represent a non string value: 0`,
		"e-title": `Value "TITLE" does not exist in "BookOrder" enum.`,
	}
	for _, b := range breaks {
		if len(b.Errors) == 0 || !strings.HasPrefix(b.Errors[0], want[b.Operation.Hash]) {
			t.Errorf("%s: errors %q, want %q first", b.Operation.Hash, b.Errors, want[b.Operation.Hash])
		}
		if strings.Contains(strings.Join(b.Errors, " "), "Did you mean") {
			t.Errorf("%s: a suggestion maps the candidate: %q", b.Operation.Hash, b.Errors)
		}
	}
	var keys []string
	for _, k := range ByKey(breaks) {
		for _, op := range k.Operations {
			keys = append(keys, k.OrgID+"/"+k.KeyID+":"+op.Hash)
		}
	}
	if want := []string{"org1/k1:a-old", "org1/k2:b-first", "org2/k3:a-old", "org2/k4:e-title"}; !slices.Equal(keys, want) {
		t.Errorf("by key %q, want %q", keys, want)
	}
	// The schema the operations were recorded against breaks none.
	current, err := document.LoadSchema(currentSchema)
	if err != nil {
		t.Fatal(err)
	}
	if b := Check(current.AST, recorded(t)); len(b) != 0 {
		t.Errorf("the current schema breaks %v", b)
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunCommand(t *testing.T) {
	ops, err := json.Marshal(recorded(t))
	if err != nil {
		t.Fatal(err)
	}
	opsFile := writeFile(t, "ops.json", string(ops))
	candidate := writeFile(t, "candidate.graphqls", candidateSDL)
	now := seen.Add(24 * time.Hour)
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := Run(context.Background(), args, &out, &errOut, now, nil)
		return code, out.String(), errOut.String()
	}

	code, out, _ := run("check", candidate, "--operations", opsFile)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	for _, line := range []string{
		"would break 3 of the 5 operations used since 2026-11-01T12:00:00Z, sent by 4 keys of 2 organizations",
		"organization org1\n  key k1\n    query Old a-old: 10 requests, last 2026-11-30T12:00:00Z\n      Cannot query field \"oldBooks\" on type \"Query\".",
		"  key k4\n    query (anonymous) e-title: 4 requests",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}
	if strings.Contains(out, "c-book") || strings.Contains(out, "d-var") || strings.Contains(out, "secret-id") {
		t.Errorf("output names an operation that does not break, or a value:\n%s", out)
	}

	code, out, _ = run("check", "--json", "--operations", opsFile, candidate)
	var rep report
	if code != 1 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Breaks) != 3 || len(rep.ByKey) != 4 || rep.Checked != 5 {
		t.Errorf("--json: exit %d\n%s", code, out)
	}

	// Keys last seen before --since are not counted: with --since after
	// every recorded use, nothing is checked and nothing breaks.
	code, out, _ = run("check", candidate, "--operations", opsFile, "--since", "2026-12-01T00:00:00Z")
	if code != 0 || !strings.Contains(out, "breaks none of the 0 operations") {
		t.Errorf("--since after every use: exit %d\n%s", code, out)
	}

	current := writeFile(t, "current.graphqls", mustRead(t, "../testdata/deprecated.graphqls"))
	if code, out, _ = run("check", current, "--operations", opsFile); code != 0 || !strings.Contains(out, "breaks none of the 5 operations") {
		t.Errorf("current schema: exit %d\n%s", code, out)
	}

	for name, args := range map[string][]string{
		"no command":        {},
		"unknown command":   {"lint", candidate},
		"no candidate":      {"check", "--operations", opsFile},
		"two candidates":    {"check", candidate, candidate, "--operations", opsFile},
		"bad since":         {"check", candidate, "--operations", opsFile, "--since", "last week"},
		"invalid candidate": {"check", writeFile(t, "bad.graphqls", "type Query {"), "--operations", opsFile},
		"missing ops file":  {"check", candidate, "--operations", filepath.Join(t.TempDir(), "none.json")},
		"bad ops file":      {"check", candidate, "--operations", writeFile(t, "bad.json", `{"hash":1}`)},
		"no database":       {"check", candidate},
	} {
		if code, _, errOut := run(args...); code != 2 || errOut == "" {
			t.Errorf("%s: exit %d (%q), want 2 with a message", name, code, errOut)
		}
	}
	if _, _, errOut := run("check", candidate); !strings.Contains(errOut, "give --operations FILE") {
		t.Errorf("no database: %q", errOut)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
