package gqlguard

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// recordsSchema is the schema TestRecordsSchemaBillsQuery uses: the
// committed records schema the gateway ships with.
const recordsSchema = "../../backend/schema/records.graphqls"

var recordsFamilies = map[string][]string{
	"bills":                {"bills", "bill"},
	"members":              {"members"},
	"regulatory_filings":   {"regulatoryFilings"},
	"federal_budgets":      {"federalBudgets"},
	"lobbying_disclosures": {"lobbyingDisclosures"},
}

func recordsCompiler(t testing.TB) *compiler {
	t.Helper()
	s, err := loadSchema(recordsSchema)
	if err != nil {
		t.Fatal(err)
	}
	return &compiler{schema: s.schema, rules: validationRules(true), maxTokens: DefaultMaxTokens, limitArg: "limit", defaultSize: DefaultListSize}
}

// compileValid compiles query and fails the test unless it validates.
func compileValid(t *testing.T, c *compiler, query string) map[string]*compiledOp {
	t.Helper()
	doc := c.compile(query)
	if doc.refusal != nil {
		t.Fatalf("%s: refused %s", query, doc.refusal)
	}
	ops := make(map[string]*compiledOp, len(doc.ops))
	for _, op := range doc.ops {
		ops[op.name] = op
	}
	return ops
}

// rootWant is an operation's expected root attribution: names (sorted,
// comma-separated), root field count, and the first introspection field as
// the byte offset of its first character in the one-line document (-1: none).
type rootWant struct {
	names  string
	fields int64
	intro  int
}

func checkRoot(t *testing.T, query string, op *compiledOp, want rootWant) {
	t.Helper()
	m := op.measures
	if got := strings.Join(m.rootNames, ","); got != want.names {
		t.Errorf("operation %s: root names %q, want %q", op.name, got, want.names)
	}
	if m.rootFields != want.fields {
		t.Errorf("operation %s: root fields %d, want %d", op.name, m.rootFields, want.fields)
	}
	switch {
	case want.intro < 0 && m.introspection != nil:
		t.Errorf("operation %s: introspection at %d:%d, want none", op.name, m.introspection.Line, m.introspection.Column)
	case want.intro >= 0 && m.introspection == nil:
		t.Errorf("operation %s: no introspection found, want column %d (%q…)", op.name, want.intro+1, query[want.intro:])
	case want.intro >= 0 && (m.introspection.Line != 1 || m.introspection.Column != want.intro+1):
		t.Errorf("operation %s: introspection at %d:%d, want 1:%d", op.name, m.introspection.Line, m.introspection.Column, want.intro+1)
	}
}

const lobbyingTwoOps = `query A { ...F } query B { ...F } fragment F on Query { lobbyingDisclosures(input:{limit:2}) { items { id registrant_name income } } }`

// TestSharedFragmentRootAttribution: a fragment contributes the same root
// names, count and introspection position to every operation that spreads
// it, directly, through chains or inline fragments, whichever operation of
// the document reached it first.
func TestSharedFragmentRootAttribution(t *testing.T) {
	c := recordsCompiler(t)
	const lob = "lobbyingDisclosures"
	at := func(query, marker string) int {
		i := strings.Index(query, marker)
		if i < 0 {
			t.Fatalf("marker %q not in %s", marker, query)
		}
		return i
	}
	type tc struct {
		name  string
		query string
		want  map[string]rootWant
	}
	cases := []tc{
		{"shared fragment, second operation", lobbyingTwoOps,
			map[string]rootWant{"A": {lob, 1, -1}, "B": {lob, 1, -1}}},
		{"chain F to G, G spread by an earlier operation",
			`query A { ...G } query B { ...F } fragment F on Query { ...G } fragment G on Query { regulatoryFilings(input:{limit:2}) { items { id } } }`,
			map[string]rootWant{"A": {"regulatoryFilings", 1, -1}, "B": {"regulatoryFilings", 1, -1}}},
		{"chain reached through its head first",
			`query A { bills { nextCursor } ...F } query B { ...G } query C { ...H } fragment F on Query { ...G } fragment G on Query { ...H members { nextCursor } } fragment H on Query { federalBudgets(input: {dataset: OUTLAYS}) { nextCursor } }`,
			map[string]rootWant{"A": {"bills,federalBudgets,members", 3, -1}, "B": {"federalBudgets,members", 2, -1}, "C": {"federalBudgets", 1, -1}}},
		{"same fragment spread twice",
			`query A { ...F ...F } query B { bills { nextCursor } ...F ...F } fragment F on Query { lobbyingDisclosures { nextCursor } }`,
			map[string]rootWant{"A": {lob, 2, -1}, "B": {"bills," + lob, 3, -1}}},
		{"spreads inside inline fragments",
			`query A { ...F } query B { ... on Query { ...F } } query C { ... { ... on Query { ...F } } } fragment F on Query { lobbyingDisclosures { nextCursor } }`,
			map[string]rootWant{"A": {lob, 1, -1}, "B": {lob, 1, -1}, "C": {lob, 1, -1}}},
		{"inline fragments inside the fragment",
			`query A { ...F } query B { members { nextCursor } ...F } fragment F on Query { ... on Query { lobbyingDisclosures { nextCursor } } ... @include(if: true) { regulatoryFilings { nextCursor } } }`,
			map[string]rootWant{"A": {lob + ",regulatoryFilings", 2, -1}, "B": {lob + ",members,regulatoryFilings", 3, -1}}},
		{"aliases",
			`query A { ...F } query B { ...F } fragment F on Query { x: lobbyingDisclosures(input:{limit:2}) { items { id } } bills: federalBudgets(input: {dataset: OUTLAYS}) { nextCursor } }`,
			map[string]rootWant{"A": {"federalBudgets," + lob, 2, -1}, "B": {"federalBudgets," + lob, 2, -1}}},
		{"directives on spreads and fields count as selected",
			`query A { ...F @include(if: true) } query B($v: Boolean!) { ...F @skip(if: $v) } query C { ...F @skip(if: true) } query D { ... @include(if: false) { ...F } } fragment F on Query { lobbyingDisclosures @include(if: false) { nextCursor } }`,
			map[string]rootWant{"A": {lob, 1, -1}, "B": {lob, 1, -1}, "C": {lob, 1, -1}, "D": {lob, 1, -1}}},
	}
	schemaInShared := `query A { ...F } query B { bills { nextCursor } ...F } fragment F on Query { s: __schema { queryType { name } } }`
	typeInChain := `query A { ...G } query B { ...F } fragment F on Query { ...G } fragment G on Query { __type(name: "Bill") { name } }`
	firstInExpansion := `query A { ...F } query B { ...F __schema { queryType { name } } } fragment F on Query { __type(name: "Bill") { name } }`
	directFirst := `query A { ...F } query B { __schema { queryType { name } } ...F } fragment F on Query { __type(name: "Bill") { name } }`
	cases = append(cases,
		tc{"__schema in a shared fragment", schemaInShared,
			map[string]rootWant{"A": {"", 1, at(schemaInShared, "s: __schema")}, "B": {"bills", 2, at(schemaInShared, "s: __schema")}}},
		tc{"__type through a chain shared with an earlier operation", typeInChain,
			map[string]rootWant{"A": {"", 1, at(typeInChain, "__type")}, "B": {"", 1, at(typeInChain, "__type")}}},
		tc{"first introspection field in expansion order, fragment first", firstInExpansion,
			map[string]rootWant{"A": {"", 1, at(firstInExpansion, "__type")}, "B": {"", 2, at(firstInExpansion, "__type")}}},
		tc{"first introspection field in expansion order, direct field first", directFirst,
			map[string]rootWant{"A": {"", 1, at(directFirst, "__type")}, "B": {"", 2, at(directFirst, "__schema")}}},
	)
	// The operation touching the unentitled field first, in the middle and
	// last, with the fragment also reached by another operation before or
	// after it.
	ops := map[string]string{
		"U": `query U { ...L }`,
		"V": `query V { bills { nextCursor } ...L }`,
		"W": `query W { members { nextCursor } }`,
	}
	for _, order := range [][3]string{{"U", "V", "W"}, {"U", "W", "V"}, {"V", "U", "W"}, {"V", "W", "U"}, {"W", "U", "V"}, {"W", "V", "U"}} {
		q := ops[order[0]] + " " + ops[order[1]] + " " + ops[order[2]] + " fragment L on Query { lobbyingDisclosures { nextCursor } }"
		cases = append(cases, tc{"order " + strings.Join(order[:], ""), q,
			map[string]rootWant{"U": {lob, 1, -1}, "V": {"bills," + lob, 2, -1}, "W": {"members", 1, -1}}})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ops := compileValid(t, c, tc.query)
			if len(ops) != len(tc.want) {
				t.Fatalf("%d operations, want %d", len(ops), len(tc.want))
			}
			for name, want := range tc.want {
				checkRoot(t, tc.query, ops[name], want)
			}
		})
	}
}

// guardRequest sends query (with operationName op, "" for none) through g
// with {civic.families} set to families, and returns the response and
// whether the next handler was reached.
func guardRequest(t *testing.T, g *Guard, families, query, op string) (*httptest.ResponseRecorder, *caddy.Replacer, bool) {
	t.Helper()
	body := `{"query":` + jsonString(query)
	if op != "" {
		body += `,"operationName":` + jsonString(op)
	}
	body += "}"
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	repl := caddy.NewReplacer()
	repl.Set("civic.families", families)
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
	next := &recordNext{}
	w := httptest.NewRecorder()
	if err := g.ServeHTTP(w, r, next); err != nil {
		t.Fatal(err)
	}
	return w, repl, next.body != nil
}

// TestSharedFragmentEntitlementRefused: with the free tier's families, an
// unentitled root field reached through a fragment another operation spread
// first is refused exactly like the same field in a lone operation.
func TestSharedFragmentEntitlementRefused(t *testing.T) {
	g := provisioned(t, &Guard{Schema: recordsSchema, Families: recordsFamilies})
	const free = "bills,members"
	single, _, reached := guardRequest(t, g, free, `{ lobbyingDisclosures(input:{limit:2}) { items { id } } }`, "")
	if single.Code != http.StatusForbidden || single.Body.String() != `{"error":"Tier not entitled to this endpoint family"}` || reached {
		t.Fatalf("single operation: %d %s (forwarded %v)", single.Code, single.Body, reached)
	}
	chain := `query A { ...G } query B { ...F } fragment F on Query { ...G } fragment G on Query { regulatoryFilings(input:{limit:2}) { items { id } } }`
	for _, tc := range []struct{ query, op string }{
		{lobbyingTwoOps, "B"},
		{lobbyingTwoOps, "A"},
		{chain, "B"},
		{chain, "A"},
		{`query A { bills { nextCursor } ...F } query B { ... on Query { ...F @include(if: true) } } fragment F on Query { x: lobbyingDisclosures { nextCursor } }`, "B"},
		// Directives are not evaluated (README): refused even where they
		// would remove the field.
		{`{ bills { nextCursor } lobbyingDisclosures @skip(if: true) { nextCursor } }`, ""},
		{`query A { ...F } query B($v: Boolean = true) { bills { nextCursor } ...F @skip(if: $v) } fragment F on Query { lobbyingDisclosures { nextCursor } }`, "B"},
	} {
		w, _, reached := guardRequest(t, g, free, tc.query, tc.op)
		if w.Code != single.Code || w.Body.String() != single.Body.String() || reached {
			t.Errorf("%s (operation %s): %d %s (forwarded %v), want the single operation's %d %s",
				tc.query, tc.op, w.Code, w.Body, reached, single.Code, single.Body)
		}
		if ct := w.Header().Get("Content-Type"); ct != single.Header().Get("Content-Type") {
			t.Errorf("%s: Content-Type %q, want %q", tc.query, ct, single.Header().Get("Content-Type"))
		}
	}
	// An entitled operation of the same document still passes.
	w, repl, reached := guardRequest(t, g, free, `query A { ...F } query B { ...F } query C { bills { nextCursor } } fragment F on Query { lobbyingDisclosures { nextCursor } }`, "C")
	if w.Code != http.StatusNoContent || !reached {
		t.Fatalf("entitled operation C: %d %s", w.Code, w.Body)
	}
	if got, _ := repl.GetString("graphql.families"); got != "bills" {
		t.Errorf("graphql.families = %q, want bills", got)
	}
}

// TestSharedFragmentIntrospectionRefused: with introspection off, __schema
// in a fragment another operation spread first is still refused.
func TestSharedFragmentIntrospectionRefused(t *testing.T) {
	off := false
	g := provisioned(t, &Guard{Schema: recordsSchema, Families: recordsFamilies, Introspection: &off})
	for _, tc := range []struct{ query, op, marker string }{
		{`query A { ...F } query B { ...F } fragment F on Query { __schema { queryType { name } } }`, "B", "__schema"},
		{`query A { bills { nextCursor } ...G } query B { ...F } fragment F on Query { ...G } fragment G on Query { t: __type(name: "Bill") { name } }`, "B", "t: __type"},
	} {
		w, _, reached := guardRequest(t, g, "bills,members", tc.query, tc.op)
		want := fmt.Sprintf(`{"data":null,"errors":[{"message":"GraphQL introspection is not allowed","locations":[{"line":1,"column":%d}],"extensions":{"code":"INTROSPECTION_DISABLED"}}]}`,
			strings.Index(tc.query, tc.marker)+1)
		if w.Code != http.StatusOK || w.Body.String() != want || reached {
			t.Errorf("%s: %d %s (forwarded %v), want %s", tc.query, w.Code, w.Body, reached, want)
		}
	}
}

// TestRootFieldsPlaceholder: {graphql.root_fields} lists the selected
// operation's root fields, sorted and distinct, fragments expanded, aliases
// resolved, introspection and __typename left out.
func TestRootFieldsPlaceholder(t *testing.T) {
	g := provisioned(t, &Guard{Schema: recordsSchema, Families: recordsFamilies})
	query := `query A { ...F } query B { b: members { nextCursor } __typename __schema { queryType { name } } ...F bills { nextCursor } } query C { __typename } fragment F on Query { bill(id: "x") { id } ... on Query { bills { nextCursor } } }`
	for op, want := range map[string]struct{ fields, families string }{
		"A": {"bill,bills", "bills"},
		"B": {"bill,bills,members", "bills,members"},
		"C": {"", ""},
	} {
		w, repl, reached := guardRequest(t, g, "bills,members", query, op)
		if w.Code != http.StatusNoContent || !reached {
			t.Fatalf("operation %s: %d %s", op, w.Code, w.Body)
		}
		got, ok := repl.GetString("graphql.root_fields")
		if !ok || got != want.fields {
			t.Errorf("operation %s: graphql.root_fields = %q (set %v), want %q", op, got, ok, want.fields)
		}
		if got, _ := repl.GetString("graphql.families"); got != want.families {
			t.Errorf("operation %s: graphql.families = %q, want %q", op, got, want.families)
		}
	}
}

// A fragment chain doubling at every step (2^30 expansions), each fragment
// adding its own root field, spread by many operations at different points:
// every operation gets the full name set of its suffix of the chain, and the
// walk stays linear in the document.
func TestRootAttributionDoublingChainStaysLinear(t *testing.T) {
	const n, ops = 30, 60
	var b strings.Builder
	for i := 0; i < ops; i++ {
		fmt.Fprintf(&b, "query Q%d { ...F%d }\n", i, i%n)
	}
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "fragment F%d on Query { ...F%d f%02d ...F%d }\n", i, i+1, i, i+1)
	}
	fmt.Fprintf(&b, "fragment F%d on Query { f%02d __schema { queryType { name } } }\n", n, n)
	doc := mustParse(t, b.String())
	w := newWalker(doc, "limit", DefaultListSize)
	for i, op := range doc.Operations {
		m := w.measure(op)
		var want []string
		for k := i % n; k <= n; k++ {
			want = append(want, fmt.Sprintf("f%02d", k))
		}
		if strings.Join(m.rootNames, ",") != strings.Join(want, ",") {
			t.Fatalf("operation %s: root names %v, want %v", op.Name, m.rootNames, want)
		}
		if m.introspection == nil || m.introspection.Line != ops+n+1 {
			t.Fatalf("operation %s: introspection %v, want the one in F%d", op.Name, m.introspection, n)
		}
		// F30 has 2 root fields, Fk has 2×Fk+1 + 1: 3×2^(30-k) - 1.
		if want := int64(3)<<(n-i%n) - 1; m.rootFields != want {
			t.Fatalf("operation %s: root fields %d, want %d", op.Name, m.rootFields, want)
		}
	}
	// Each selection of an operation or a fragment is visited at most twice
	// (cost walk and root attribution).
	if selections := int64(ops + 3*n + 4); w.steps > 2*selections {
		t.Fatalf("walker took %d steps for %d selections", w.steps, selections)
	}
}

// More root names than the walker scans (16) and than one bitset word holds
// (64), shared by fragments and operations, some met again after the walker
// switched to its map: the names agree with the reference expander in every
// operation.
func TestRootAttributionManyNames(t *testing.T) {
	const frags, perFrag, ops = 10, 15, 6
	var b strings.Builder
	for i := 0; i < ops; i++ {
		// own0 and n000 again: names met first, then again past the scan.
		fmt.Fprintf(&b, "query Q%d { own%d own0 n000 ...F%d ... on Query { ...F%d } }\n", i, i, (i*3)%frags, (i*7+2)%frags)
	}
	for i := 0; i < frags; i++ {
		fmt.Fprintf(&b, "fragment F%d on Query {", i)
		for k := 0; k < perFrag; k++ {
			fmt.Fprintf(&b, " n%03d", (i*perFrag+k)*7%(frags*perFrag))
		}
		if i+1 < frags {
			fmt.Fprintf(&b, " ...F%d", i+1)
		}
		b.WriteString(" }\n")
	}
	query := b.String()
	doc := mustParse(t, query)
	ref := newReference(doc)
	w := newWalker(doc, "limit", DefaultListSize)
	for _, op := range doc.Operations {
		want := ref.measure(op)
		if len(want.names) <= 64 && op.Name == "Q0" {
			t.Fatalf("Q0 reaches only %d names", len(want.names))
		}
		compareMeasures(t, query, "many names", op.Name, w.measure(op), want)
	}
}
