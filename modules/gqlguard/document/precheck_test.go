package document

import (
	"fmt"
	"strings"
	"testing"
)

// Documents within the token limit that would make gqlparser's validation
// quadratic are refused before validation, quickly; ordinary documents pass.
func TestQuadraticValidationRefused(t *testing.T) {
	c := testCompiler(t, testSchema)
	chain := func(n, fan int) string {
		var b strings.Builder
		b.WriteString("{ ...F0 } ")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "fragment F%d on Query {%s } ", i, strings.Repeat(fmt.Sprintf(" ...F%d", i+1), fan))
		}
		fmt.Fprintf(&b, "fragment F%d on Query { __typename }", n)
		return b.String()
	}
	var spreads strings.Builder
	spreads.WriteString("{ bills {")
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&spreads, " ...P%d", i)
	}
	spreads.WriteString(" } }")
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&spreads, " fragment P%d on BillsPage { nextCursor }", i)
	}
	for name, q := range map[string]string{
		"same field repeated":    "{ bills { " + strings.Repeat("nextCursor ", 4900) + "} }",
		"inline fragments":       "{ bills { " + strings.Repeat("... on BillsPage { nextCursor } ", 800) + "} }",
		"fragment chain":         chain(450, 1),
		"fragment fan-out chain": chain(300, 2),
		"many spread fragments":  spreads.String(),
	} {
		doc := c.Compile(q)
		if !strings.Contains(string(doc.Refusal), `"code":"DOCUMENT_TOO_COMPLEX"`) {
			t.Errorf("%s (%d tokens): not refused as too complex: %.200s", name, doc.Tokens, doc.Refusal)
		}
	}
	for _, q := range []string{
		benchBillsQuery,
		"query A { ...F } query B { ...F ...G } fragment F on Query { bills { ...I } } fragment G on Query { members { nextCursor } } fragment I on BillsPage { items { id title } nextCursor }",
	} {
		if doc := c.Compile(q); doc.Refusal != nil {
			t.Errorf("ordinary document refused: %s", doc.Refusal)
		}
	}
}

// The valve's own cost on a document that would take gqlparser 2 s.
func BenchmarkQuadraticRefusal(b *testing.B) {
	c := testCompiler(b, testSchema)
	q := "{ bills { " + strings.Repeat("nextCursor ", 4900) + "} }"
	b.ReportAllocs()
	for b.Loop() {
		if doc := c.Compile(q); doc.Refusal == nil {
			b.Fatal("not refused")
		}
	}
}
