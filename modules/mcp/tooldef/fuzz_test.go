package tooldef

import (
	"encoding/json"
	"testing"
)

// FuzzToolArguments: any arguments either are refused with an
// *ArgumentError or become variables that are a JSON object the checker
// accepts again unchanged; the request body's query is always the
// manifest's document.
func FuzzToolArguments(f *testing.F) {
	find, _ := libraryTools(f)
	for _, seed := range []string{
		`{"genre":"FICTION","when":0,"text":"x","id":"1"}`,
		`{"genre":"FICTION","when":0,"text":"x","id":"1","first":1e1,"filter":{"and":[{"published":{"from":1}}]}}`,
		`{"genre":"FICTION","when":0,"text":"x","id":"1","tags":[["a",null],null],"kinds":["BOOK"]}`,
		`null`, `[]`, `{"first":1e999}`, `{"a":1} x`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		vars, err := find.Variables(args)
		if err != nil {
			if _, ok := err.(*ArgumentError); !ok {
				t.Fatalf("error %T: %v", err, err)
			}
			return
		}
		var obj map[string]any
		if err := json.Unmarshal(vars, &obj); err != nil {
			t.Fatalf("variables %s: %v", vars, err)
		}
		again, err := find.Variables(vars)
		if err != nil || string(again) != string(vars) {
			t.Fatalf("variables %s checked again: %s, %v", vars, again, err)
		}
		body, err := find.Request(args)
		if err != nil {
			t.Fatal(err)
		}
		var sent struct{ Query string }
		if err := json.Unmarshal(body, &sent); err != nil || sent.Query != find.Document {
			t.Fatalf("body %s: %v", body, err)
		}
	})
}
