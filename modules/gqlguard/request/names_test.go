package request

import (
	"errors"
	"testing"
)

// TestMisspelledParam: which names stand for a GraphQL parameter without
// being spelled as one (docs/design.md D64): another case — Unicode simple
// folding included, as strings.EqualFold does it —, white space around, a
// '[' or NUL suffix.
func TestMisspelledParam(t *testing.T) {
	for name, want := range map[string]string{
		"query": "", "variables": "", "operationName": "", "extensions": "", "documentId": "",
		"Query": "query", "QUERY": "query", "qUERY": "query",
		"Variables": "variables", "VARIABLES": "variables",
		"operationname": "operationName", "OPERATIONNAME": "operationName",
		"Extensions": "extensions", "documentID": "documentId", "DocumentId": "documentId",
		"variableſ":  "variables",                                         // U+017F LATIN SMALL LETTER LONG S folds to s
		"extenſionſ": "extensions",                                        //
		" query":     "query", "query\t": "query", "\u00a0query": "query", // white space, NBSP included (unicode.IsSpace)
		"query[]": "query", "variables[a]": "variables", "query\x00x": "query", "Query[]": "query",
		// Not the same name to EqualFold: left to the upstream as unknown parameters.
		"\u212auery": "", // the Kelvin sign folds to k, and no GraphQL parameter holds a k
		"varıables":  "", // dotless i has no simple fold to i
		"queryy":     "", //
		"trace":      "", //
		"q uery":     "", // white space inside is another name
		"":           "", //
		"[query]":    "", // cut at '[': empty
		"Query ":     "query",
	} {
		if got := misspelledParam(name); got != want {
			t.Errorf("misspelledParam(%q) = %q, want %q", name, got, want)
		}
	}
}

func wantBadRequest(t *testing.T, what string, err error, msg string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Error() != msg {
		t.Errorf("%s: %v, want the 400 %q", what, err, msg)
	}
}

// TestCheckURLNames: a URL parameter standing for a GraphQL parameter in
// another spelling is refused, after percent-decoding; a percent-encoded
// exact name is the name itself and passes (it stays Aliased for the cache).
func TestCheckURLNames(t *testing.T) {
	for raw, msg := range map[string]string{
		"Query=%7Ba%7D":            `Request URL parameter "Query" must be spelled "query"`,
		"QUERY=1":                  `Request URL parameter "QUERY" must be spelled "query"`,
		"query=a&Variables=%7B%7D": `Request URL parameter "Variables" must be spelled "variables"`,
		"query=a&variables=%7B%7D&Variables=%7B%7D": `Request URL parameter "Variables" must be spelled "variables"`,
		"query=a&operationname=B":                   `Request URL parameter "operationname" must be spelled "operationName"`,
		"%51uery=1":                                 `Request URL parameter "Query" must be spelled "query"`,
		"qu%45ry=1":                                 `Request URL parameter "quEry" must be spelled "query"`,
		"variable%C5%BF=1":                          `Request URL parameter "variableſ" must be spelled "variables"`,
		"variables%5B%5D=1":                         `Request URL parameter "variables[]" must be spelled "variables"`,
		"variables[]=1":                             `Request URL parameter "variables[]" must be spelled "variables"`,
		"+variables=1":                              `Request URL parameter " variables" must be spelled "variables"`,
		"variables%20=1":                            `Request URL parameter "variables " must be spelled "variables"`,
		"variables%00=1":                            "Request URL parameter \"variables\\x00\" must be spelled \"variables\"",
		"a=1;Extensions=1":                          `Request URL parameter "Extensions" must be spelled "extensions"`,
		"documentID":                                `Request URL parameter "documentID" must be spelled "documentId"`,
	} {
		wantBadRequest(t, "?"+raw, CheckURLNames(raw), msg)
	}
	for _, raw := range []string{
		"", "query=a&variables=%7B%7D&operationName=B&extensions=%7B%7D&documentId=x",
		"vari%61bles=1", "%71uery=1", "trace=1&_=2", "a=1;variables=1", "variablesx=1&queryy=2",
		"vari%6=1", // does not decode: net/url refuses the GET's query as malformed
		"%E2%84%AAuery=1",
	} {
		if err := CheckURLNames(raw); err != nil {
			t.Errorf("?%s: %v, want it accepted", raw, err)
		}
	}
}

// TestFromURLQueryRefusesOtherSpellings: a GET naming a GraphQL parameter in
// another case beside (or instead of) the real one is refused, not passed on
// as an unknown parameter.
func TestFromURLQueryRefusesOtherSpellings(t *testing.T) {
	_, err := FromURLQuery("query=%7Ba%7D&Query=%7Bb%7D")
	wantBadRequest(t, "query and Query", err, `Request URL parameter "Query" must be spelled "query"`)
	_, err = FromURLQuery("documentId=x&QUERY=%7Bb%7D")
	wantBadRequest(t, "documentId and QUERY", err, `Request URL parameter "QUERY" must be spelled "query"`)
	_, err = FromURLQuery("query=%7Ba%7D;Query=%7Bb%7D")
	wantBadRequest(t, "a ';' separator", err, "Request URL query is malformed")
	if l, err := FromURLQuery("query=%7Ba%7D&vari%61bles=%7B%7D"); err != nil || l.Query() != "{a}" {
		t.Fatalf("a percent-encoded exact name: %v", err)
	}
}

// TestBodyRefusesOtherSpellings: a body member standing for a GraphQL
// member in another spelling — as written or once its JSON escapes are
// decoded — is refused with the spelling it must have; an escaped exact
// name is the member itself.
func TestBodyRefusesOtherSpellings(t *testing.T) {
	for body, msg := range map[string]string{
		`{"query":"{a}","Query":"{b}"}`:       `Request body key "Query" must be spelled "query"`,
		`{"QUERY":"{b}"}`:                     `Request body key "QUERY" must be spelled "query"`,
		`{"query":"{a}","Variables":{}}`:      `Request body key "Variables" must be spelled "variables"`,
		`{"query":"{a}","operationname":"B"}`: `Request body key "operationname" must be spelled "operationName"`,
		`{"\u0051uery":"{b}"}`:                `Request body key "Query" must be spelled "query"`,
		`{"query":"{a}","variable\u017f":{}}`: `Request body key "variableſ" must be spelled "variables"`,
		`{"query":"{a}","extensions ":{}}`:    `Request body key "extensions " must be spelled "extensions"`,
		`{"query":"{a}","variables[]":{}}`:    `Request body key "variables[]" must be spelled "variables"`,
		`{"query":"{a}","documentID":"x"}`:    `Request body key "documentID" must be spelled "documentId"`,
		`{"query":"{a}","\u0071uery":"{b}"}`:  `Request body has duplicate key "query"`,
		`{"query":"{a}","trace":1}`:           `Request body has unknown key "trace"`,
	} {
		_, err := Locate([]byte(body))
		wantBadRequest(t, body, err, msg)
	}
	l, err := Locate([]byte(`{"qu\u0065ry":"{a}","vari\u0061bles":{}}`))
	if err != nil || l.Query() != "{a}" || !l.sent.Aliased {
		t.Fatalf("escaped exact names: %v (Aliased %v)", err, l.sent.Aliased)
	}
}
