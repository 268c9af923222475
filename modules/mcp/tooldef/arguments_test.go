package tooldef

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Arguments the find_books and add_book tools accept, and what they send.
func TestVariablesAccepted(t *testing.T) {
	find, add := libraryTools(t)
	for _, tc := range []struct {
		tool      *Tool
		args      string
		variables string
	}{
		{find, `{"genre":"FICTION","when":"2024-01-01T00:00:00Z","text":"x","id":"1"}`,
			`{"genre":"FICTION","id":"1","text":"x","when":"2024-01-01T00:00:00Z"}`},
		// Int written as a float without a fraction is sent as an integer;
		// nullable variables may be null; a custom scalar takes any value.
		{find, `{"genre":"POETRY","when":{"at":1},"text":"","id":"1","first":1e1,"filter":null,"kinds":null,"extra":[1,"a"]}`,
			`{"extra":[1,"a"],"filter":null,"first":10,"genre":"POETRY","id":"1","kinds":null,"text":"","when":{"at":1}}`},
		{find, `{"genre":"FICTION","when":0,"text":"x","id":"1","first":-2147483648.0,"tags":[["a",null],null]}`,
			`{"first":-2147483648,"genre":"FICTION","id":"1","tags":[["a",null],null],"text":"x","when":0}`},
		// Input objects, recursive, with lists of enums and nested objects.
		{find, `{"genre":"FICTION","when":0,"text":"x","id":"1","filter":{"and":[{"title":"a","genres":["NONFICTION"]},{"or":[],"published":{"from":"2020","inclusive":false}}],"limit":100}}`,
			`{"filter":{"and":[{"genres":["NONFICTION"],"title":"a"},{"or":[],"published":{"from":"2020","inclusive":false}}],"limit":100},"genre":"FICTION","id":"1","text":"x","when":0}`},
		{add, `{"input":{"title":"T","rating":4.25,"genre":null}}`, `{"input":{"genre":null,"rating":4.25,"title":"T"}}`},
		{add, `{"input":{"title":"T","rating":1e308}}`, `{"input":{"rating":1e308,"title":"T"}}`},
	} {
		got, err := tc.tool.Variables(json.RawMessage(tc.args))
		if err != nil {
			t.Errorf("%s %s: %v", tc.tool.Name, tc.args, err)
			continue
		}
		if string(got) != tc.variables {
			t.Errorf("%s %s:\n got %s\nwant %s", tc.tool.Name, tc.args, got, tc.variables)
		}
	}
}

// Refusals name the argument path and never repeat the value.
func TestVariablesRefused(t *testing.T) {
	find, add := libraryTools(t)
	const base = `"genre":"FICTION","when":0,"text":"x","id":"1"`
	for _, tc := range []struct {
		tool *Tool
		args string
		want string
	}{
		{find, `[1,2]`, "arguments: must be a JSON object"},
		{find, `{"genre":`, "arguments: not valid JSON"},
		{find, `{"genre":"FICTION"} {}`, "arguments: not valid JSON (data after the object)"},
		{find, `{}`, `argument "genre" is required`},
		{find, `{"genre":"FICTION","when":0,"text":"x"}`, `argument "id" is required`},
		{find, `{` + base + `,"genre":null}`, `argument "genre" must not be null`},
		{find, `{"genre":"SECRET-VALUE","when":0,"text":"x","id":"1"}`, `argument "genre" must be one of FICTION, NONFICTION, POETRY`},
		{find, `{"genre":"FICTION","when":null,"text":"x","id":"1"}`, `argument "when" must not be null`},
		{find, `{` + base + `,"first":"10"}`, `argument "first" must be an integer`},
		{find, `{` + base + `,"first":1.5}`, `argument "first" must be an integer from -2147483648 to 2147483647`},
		{find, `{` + base + `,"first":2147483648}`, `argument "first" must be an integer from -2147483648 to 2147483647`},
		{find, `{` + base + `,"first":1e999}`, `argument "first" must be an integer from`},
		{find, `{"genre":"FICTION","when":0,"text":7,"id":"1"}`, `argument "text" must be a string`},
		{find, `{"genre":"FICTION","when":0,"text":"x","id":1}`, `argument "id" must be a string`},
		{find, `{` + base + `,"withAuthor":"yes"}`, `argument "withAuthor" must be true or false`},
		{find, `{` + base + `,"kinds":"BOOK"}`, `argument "kinds" must be an array`},
		{find, `{` + base + `,"kinds":["BOOK",null]}`, `argument "kinds[1]" must not be null`},
		{find, `{` + base + `,"tags":[["a"],[1]]}`, `argument "tags[1][0]" must be a string`},
		{find, `{` + base + `,"filter":[]}`, `argument "filter" must be an object (BookFilter)`},
		{find, `{` + base + `,"filter":{"and":[{"published":{"to":"x"}}]}}`, `argument "filter.and[0].published.from" is required`},
		{find, `{` + base + `,"filter":{"and":[{},{"genres":["NOPE"]}]}}`, `argument "filter.and[1].genres[0]" must be one of`},
		{find, `{` + base + `,"filter":{"isbn":"1"}}`, `argument "filter" has "isbn", which is not a field of BookFilter`},
		{find, `{` + base + `,"limit":5}`, `arguments: "limit" is not an argument of this tool (arguments: filter, first, genre, tags, extra, when, withAuthor, text, kinds, id)`},
		{add, `{"input":{"title":"T","rating":"high"}}`, `argument "input.rating" must be a number`},
		{add, `{"input":{"title":"T","rating":1e400}}`, `argument "input.rating" must be a number within the range of a 64-bit float`},
	} {
		_, err := tc.tool.Variables(json.RawMessage(tc.args))
		var ae *ArgumentError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: err = %v, want %q", tc.tool.Name, tc.args, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "SECRET-VALUE") {
			t.Errorf("%s: the error repeats the value: %v", tc.tool.Name, err)
		}
	}
}

// An unknown argument's name is repeated only when it is a short GraphQL
// name: a long one may be a key pasted in the wrong place.
func TestUnknownArgumentNameNotEchoed(t *testing.T) {
	find, _ := libraryTools(t)
	const key = "cg_live_H0SQlqrynazLh5SSwq0DwkxZYZBSivBorr582Hb5vRz"
	for _, args := range []string{
		`{"genre":"FICTION","when":0,"text":"x","id":"1","` + key + `":1}`,
		`{"genre":"FICTION","when":0,"text":"x","id":"1","filter":{"` + key + `":1}}`,
	} {
		_, err := find.Variables(json.RawMessage(args))
		if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "an unknown member") {
			t.Errorf("err = %v", err)
		}
	}
}

// Arguments only ever become variables: a string holding a GraphQL document,
// a key, or JSON that would close the body is a value, and the query sent is
// the manifest's document byte for byte.
func TestArgumentsAreInert(t *testing.T) {
	tool, _ := recordsTools(t).Lookup("search_bills")
	const key = "cg_live_H0SQlqrynazLh5SSwq0DwkxZYZBSivBorr582Hb5vRz"
	hostile := map[string]any{
		"text":  `"}) { items { id } } lobbyingDisclosures { items { client_name } } #`,
		"type":  "query { lobbyingDisclosures { items { id } } }",
		"after": key,
	}
	raw, _ := json.Marshal(hostile)
	body, err := tool.Request(raw)
	if err != nil {
		t.Fatal(err)
	}
	var sent struct {
		Query         string         `json:"query"`
		OperationName string         `json:"operationName"`
		Variables     map[string]any `json:"variables"`
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sent); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	if sent.Query != tool.Document || sent.OperationName != "SearchBills" {
		t.Errorf("query or operation name changed: %q %q", sent.Query, sent.OperationName)
	}
	for k, v := range hostile {
		if sent.Variables[k] != v {
			t.Errorf("variable %s = %v, want the argument as sent", k, sent.Variables[k])
		}
	}
	if len(sent.Variables) != len(hostile) {
		t.Errorf("variables %v", sent.Variables)
	}
	// The only place the key appears is the after variable.
	if strings.Count(string(body), key) != 1 {
		t.Errorf("the key appears %d times in %s", strings.Count(string(body), key), body)
	}

	// Refused arguments send nothing.
	if body, err := tool.Request(json.RawMessage(`{"first":"ten"}`)); err == nil || body != nil {
		t.Errorf("a refused call built a body: %s, %v", body, err)
	}
	// No arguments: an empty variables object.
	if body, err := tool.Request(nil); err != nil || !strings.HasSuffix(string(body), `,"variables":{}}`) {
		t.Errorf("no arguments: %s, %v", body, err)
	}
}
