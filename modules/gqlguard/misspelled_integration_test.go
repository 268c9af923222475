package gqlguard

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
)

// TestMisspelledParameterNames: through Caddy, a GraphQL parameter named in
// another case (or trimmed, or with a "[]" suffix) is refused with the
// guard's 400 before anything is forwarded — in a GET's URL, a POST's URL
// and a POST body — while percent- and JSON-escaped exact names still pass
// (docs/design.md D64).
func TestMisspelledParameterNames(t *testing.T) {
	s := startCaddy(t, fmt.Sprintf(`
	route /get {
		graphql_guard {
			schema %s
			methods GET POST
		}
		%s
	}`, testdataPath(t, "library.graphqls"), libraryEcho))
	books := url.QueryEscape(`{ books { endCursor } }`)
	other := url.QueryEscape(`{ loans(memberId: "m1") { id } }`)
	refusal := func(where, name, want string) string {
		return string(messageBody(fmt.Sprintf("Request %s %q must be spelled %q", where, name, want)))
	}
	if got := refusal("URL parameter", "Query", "query"); got != `{"errors":[{"message":"Request URL parameter \"Query\" must be spelled \"query\""}]}` {
		t.Fatalf("the documented body reads %s", got)
	}
	for _, tc := range []struct {
		name, method, rawQuery, body, want string
	}{
		{"GET query beside Query", http.MethodGet, "query=" + books + "&Query=" + other, "", refusal("URL parameter", "Query", "query")},
		{"GET QUERY alone", http.MethodGet, "QUERY=" + other, "", refusal("URL parameter", "QUERY", "query")},
		{"GET Variables beside variables", http.MethodGet, "query=" + books + "&variables=%7B%7D&Variables=%7B%7D", "", refusal("URL parameter", "Variables", "variables")},
		{"GET operationname", http.MethodGet, "query=" + books + "&operationname=X", "", refusal("URL parameter", "operationname", "operationName")},
		{"GET percent-encoded Q", http.MethodGet, "query=" + books + "&%51uery=" + other, "", refusal("URL parameter", "Query", "query")},
		{"GET long s", http.MethodGet, "query=" + books + "&variable%C5%BF=%7B%7D", "", refusal("URL parameter", "variableſ", "variables")},
		{"GET array suffix", http.MethodGet, "query=" + books + "&query%5B%5D=" + other, "", refusal("URL parameter", "query[]", "query")},
		{"POST URL Query", http.MethodPost, "Query=" + other, q(`{ books { endCursor } }`), refusal("URL parameter", "Query", "query")},
		{"POST body Query", http.MethodPost, "", q(`{ books { endCursor } }`, `"Query":"{ loans(memberId: \"m1\") { id } }"`), refusal("body key", "Query", "query")},
		{"POST body escaped Q", http.MethodPost, "", `{"\u0051uery":"{ books { endCursor } }"}`, refusal("body key", "Query", "query")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := call{method: tc.method, path: "/get?" + tc.rawQuery, body: tc.body}
			if tc.method == http.MethodGet {
				c.ctype = "-"
			}
			resp, body := s.do(t, c)
			expect(t, tc.name, resp, body, 400, tc.want)
		})
	}
	t.Run("escaped exact names pass", func(t *testing.T) {
		resp, body := s.do(t, call{method: http.MethodGet, path: "/get?qu%65ry=" + books, ctype: "-"})
		expect(t, "GET qu%65ry", resp, body, 200, echoed("query", "books", "", "qu%65ry="+books, ""))
		escaped := `{"qu\u0065ry":"{ books { endCursor } }"}`
		resp, body = s.do(t, call{path: "/get", body: escaped})
		expect(t, "POST qu\\u0065ry", resp, body, 200, echoed("query", "books", "", "", escaped))
	})
}
