package reliability

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// GraphQL parameter names shaped to slip past the guard (docs/design.md
// D64): the real civicgate binary in front of the example's gqlgen engine,
// with GET allowed. A name that a case-insensitive, trimming or PHP-style
// upstream would take for query, variables, operationName, extensions or
// documentId, but that is not spelled so once decoded, must be refused with
// the guard's exact 400 and never reach the engine — beside the real
// parameter, instead of it, in a POST's URL and in a body. Escapes every
// reader decodes alike still pass.

func TestHostileParameterSpellings(t *testing.T) {
	t.Parallel()
	a, keys := startAnyBackend(t, "\t\t\tmethods GET POST", "partner")
	key := keys[0]
	send := func(method, rawQuery, body string) (int, string) {
		t.Helper()
		var req *http.Request
		var err error
		if body != "" {
			req, err = http.NewRequestWithContext(t.Context(), method, a.URL, strings.NewReader(body))
		} else {
			req, err = http.NewRequestWithContext(t.Context(), method, a.URL, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		req.URL.RawQuery = rawQuery // as written: nothing re-encoded
		req.Header.Set("Authorization", "Bearer "+key)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		r := sendCacheReq(t, req)
		return r.status, r.body
	}
	upstream := func() int {
		a.Up.mu.Lock()
		defer a.Up.mu.Unlock()
		return a.Up.requests
	}
	refused := func(where, name, want string) string {
		return fmt.Sprintf(`{"errors":[{"message":"Request %s %s must be spelled \"%s\""}]}`, where, jsonQuoted(fmt.Sprintf("%q", name)), want)
	}
	oneBook := url.QueryEscape(`{ books(first: 1) { nodes { title } } }`)
	loans := url.QueryEscape(`{ loans(memberId: "m1") { id } }`)
	vars := url.QueryEscape(`{"n":4}`)
	body := `{"query":"{ books(first: 1) { nodes { title } } }"}`

	before := upstream()
	for _, c := range []struct {
		name, method, rawQuery, body, where, param, want string
	}{
		{"Query instead of query", "GET", "Query=" + loans, "", "URL parameter", "Query", "query"},
		{"QUERY beside query", "GET", "query=" + oneBook + "&QUERY=" + loans, "", "URL parameter", "QUERY", "query"},
		{"Query before query", "GET", "Query=" + loans + "&query=" + oneBook, "", "URL parameter", "Query", "query"},
		{"Variables beside variables", "GET", "query=" + oneBook + "&variables=%7B%7D&Variables=" + vars, "", "URL parameter", "Variables", "variables"},
		{"operationname", "GET", "query=" + oneBook + "&operationname=Other", "", "URL parameter", "operationname", "operationName"},
		{"EXTENSIONS", "GET", "query=" + oneBook + "&EXTENSIONS=%7B%7D", "", "URL parameter", "EXTENSIONS", "extensions"},
		{"documentID", "GET", "query=" + oneBook + "&documentID=x", "", "URL parameter", "documentID", "documentId"},
		{"percent-encoded capital Q", "GET", "query=" + oneBook + "&%51uery=" + loans, "", "URL parameter", "Query", "query"},
		{"percent-encoded capital E in query", "GET", "query=" + oneBook + "&qu%45ry=" + loans, "", "URL parameter", "quEry", "query"},
		{"long s", "GET", "query=" + oneBook + "&variable%C5%BF=" + vars, "", "URL parameter", "variableſ", "variables"},
		{"array suffix", "GET", "query=" + oneBook + "&query%5B%5D=" + loans, "", "URL parameter", "query[]", "query"},
		{"leading space", "GET", "query=" + oneBook + "&+query=" + loans, "", "URL parameter", " query", "query"},
		{"NUL suffix", "GET", "query=" + oneBook + "&query%00=" + loans, "", "URL parameter", "query\x00", "query"},
		{"POST URL Query", "POST", "Query=" + loans, body, "URL parameter", "Query", "query"},
		{"POST URL after ;", "POST", "a=1;Variables=" + vars, body, "URL parameter", "Variables", "variables"},
		{"POST body Query", "POST", "", `{"query":"{ books(first: 1) { nodes { title } } }","Query":"{ loans(memberId: \"m1\") { id } }"}`, "body key", "Query", "query"},
		{"POST body JSON-escaped Q", "POST", "", `{"\u0051uery":"{ loans(memberId: \"m1\") { id } }"}`, "body key", "Query", "query"},
		{"POST body operationname", "POST", "", `{"query":"{ books(first: 1) { nodes { title } } }","operationname":"X"}`, "body key", "operationname", "operationName"},
		{"POST body long s", "POST", "", `{"query":"{ books(first: 1) { nodes { title } } }","variable\u017f":{"n":4}}`, "body key", "variableſ", "variables"},
	} {
		st, got := send(c.method, c.rawQuery, c.body)
		if want := refused(c.where, c.param, c.want); st != 400 || got != want {
			t.Errorf("%s: %d %s, want 400 %s", c.name, st, got, want)
		}
	}
	if n := upstream() - before; n != 0 {
		t.Fatalf("%d refused requests reached the engine:\n%s", n, a.Up.bodies.String())
	}

	// What every reader decodes alike passes; so does a name no fold makes a
	// GraphQL parameter: the Kelvin sign folds to k, which none contains.
	for _, c := range []struct{ name, method, rawQuery, body string }{
		{"percent-encoded exact name", "GET", "qu%65ry=" + oneBook, ""},
		{"Kelvin sign", "GET", "query=" + oneBook + "&%E2%84%AAuery=" + loans, ""},
		{"dotless i", "GET", "query=" + oneBook + "&var%C4%B1ables=" + vars, ""},
		{"JSON-escaped exact name", "POST", "", `{"qu\u0065ry":"{ books(first: 1) { nodes { title } } }"}`},
	} {
		st, got := send(c.method, c.rawQuery, c.body)
		if st != 200 || !strings.Contains(got, "Middlemarch") || strings.Contains(got, "loans") {
			t.Errorf("%s: %d %.300s, want the one book", c.name, st, got)
		}
	}
}

// jsonQuoted is s as it reads inside a JSON string.
func jsonQuoted(s string) string { q := jsonString(s); return q[1 : len(q)-1] }
