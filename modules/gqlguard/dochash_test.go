package gqlguard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/civicgate/civicgate/modules/contract"
)

// TestDocumentHashIsTheNormalForm: {graphql.document_hash} is the same for
// texts that differ only in white space, commas and comments, and differs
// when the document does (an argument, an alias, the operation name).
func TestDocumentHashIsTheNormalForm(t *testing.T) {
	g := provisioned(t, &Guard{Schema: "../../backend/schema/records.graphqls"})
	hash := func(query string) string {
		t.Helper()
		body := `{"query":` + quoteJSON(query) + `}`
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		repl := caddy.NewReplacer()
		r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
		w := httptest.NewRecorder()
		if err := g.ServeHTTP(w, r, &recordNext{}); err != nil || w.Code != http.StatusNoContent {
			t.Fatalf("%q: %d %s %v", query, w.Code, w.Body.String(), err)
		}
		h, _ := repl.GetString(contract.GraphQLDocumentHash)
		if len(h) != 64 {
			t.Fatalf("document hash %q", h)
		}
		return h
	}
	base := hash(`query B { bills(input: {limit: 2}) { nextCursor } }`)
	for _, same := range []string{
		"query B {\n  bills(input: {limit: 2}) {\n    nextCursor\n  }\n}\n",
		"# a comment\nquery B { bills(input: {limit: 2},) { nextCursor, } }",
	} {
		if got := hash(same); got != base {
			t.Errorf("%q hashed %s, want %s", same, got, base)
		}
	}
	for _, other := range []string{
		`query B { bills(input: {limit: 3}) { nextCursor } }`,
		`query B { bills(input: {limit: 2}) { next: nextCursor } }`,
		`query C { bills(input: {limit: 2}) { nextCursor } }`,
	} {
		if got := hash(other); got == base {
			t.Errorf("%q hashed like the base document", other)
		}
	}
}

func quoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
