package gqlguard

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/modules/gqlguard/request"
)

// On the fast path a token hidden by JSON escapes in the query, the
// operation name or the variables is still found, and the memoised
// coercion still refuses bad variables and prices new ones.
func TestFastPathChecks(t *testing.T) {
	g := provisioned(t, &Guard{})
	const token = "cg_test_abcdefghijklmnopqrstuvwxyz012345"
	esc := `\u0063` + token[1:]
	send := func(body string) (int, string) {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		if err := g.ServeHTTP(w, r, &recordNext{}); err != nil {
			t.Fatal(err)
		}
		return w.Code, w.Body.String()
	}
	const refused = `{"errors":[{"message":"Request must not contain the bearer token"}]}`
	for name, body := range map[string]string{
		"query":         `{"query":"{ bills(input: {q: \"` + esc + `\"}) { nextCursor } }"}`,
		"operationName": `{"query":"query Q { bills { nextCursor } }","operationName":"` + esc + `"}`,
		"variables":     `{"query":"query($q: String) { bills(input: {q: $q}) { nextCursor } }","variables":{"q":"` + esc + `"}}`,
		"variable name": `{"query":"{ bills { nextCursor } }","variables":{"` + esc + `":1}}`,
	} {
		if l, err := request.Locate([]byte(body)); err != nil || !l.Fast() {
			t.Fatalf("%s: not on the fast path", name)
		}
		if code, got := send(body); code != http.StatusBadRequest || got != refused {
			t.Errorf("%s: %d %s", name, code, got)
		}
	}
	q := `{"query":"query Q($n: Int) { bills(input: {limit: $n}) { items { id } nextCursor } }","operationName":"\u0051","variables":`
	for range 2 { // the second time from the memo
		if code, body := send(q + `{"n":5}}`); code != http.StatusNoContent {
			t.Fatalf("valid: %d %s", code, body)
		}
		if code, body := send(q + `{"n":"x"}}`); code != 400 || !strings.Contains(body, `Variable \"$n\" is invalid`) {
			t.Fatalf("bad variable: %d %s", code, body)
		}
		if code, body := send(q + `{"n":100000}}`); code != 200 || !strings.Contains(body, "QUERY_TOO_COMPLEX") {
			t.Fatalf("cost from variables: %d %s", code, body)
		}
	}
	if code, body := send(`{"query":"query Q { bills { nextCursor } }","operationName":"R"}`); code != 400 || !strings.Contains(body, `Unknown operation named \"R\"`) {
		t.Fatalf("unknown operation: %d %s", code, body)
	}
}
