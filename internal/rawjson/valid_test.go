package rawjson

import (
	"encoding/json"
	"strings"
	"testing"
)

var validJSONSeeds = []string{
	``, ` `, `{}`, `[]`, `{"a":1}`, `{"a":[1,2,{"b":null}]}`, `"x"`, `1`, `-0`, `-0.5e+10`, `01`, `1.`, `.5`, `1e`, `-`,
	`{"a":1,}`, `[1,]`, `{"a" 1}`, `{a:1}`, `{"a":1}}`, `[[]`, `]`, `{"a":"\u00e9\n\"\\\/\b\f\r\t"}`, `"\x"`, `"\u12"`,
	"\"\x01\"", `truex`, `tru`, `nul`, `fals`, `[true,false,null]`, `{"a":{"b":{"c":{}}}}`, ` {"query":"{ a }"} `,
	`{"query":"{ a }"} x`, `{"":""}`, `[1 2]`, `{"a":1 "b":2}`, "{\"a\":\"\xff\"}", `1e5`, `1E-5`, `-12.34e+5`,
	strings.Repeat("[", 70) + strings.Repeat("]", 70), strings.Repeat("[", 70) + strings.Repeat("]", 69),
	strings.Repeat(`{"a":`, 65) + "1" + strings.Repeat("}", 65),
}

func TestValidJSONAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range validJSONSeeds {
		if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%q) = %v, json.Valid %v", s, got, want)
		}
	}
}

// FuzzValidJSON: Valid and encoding/json.Valid agree on every input.
func FuzzValidJSON(f *testing.F) {
	for _, s := range validJSONSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}

// benchBody is the body of the guard's BenchmarkServeBillsQueryCached.
const benchBody = `{"query":"query Bills($congress: Int, $cursor: String) {\n  bills(input: {congress: $congress, type: \"hr\", cursor: $cursor, limit: 50}) {\n    items { id congress type number title introducedDate latestAction { date text } sponsors { bioguideId name party state } }\n    nextCursor\n  }\n}","variables":{"congress":118,"cursor":null},"operationName":"Bills"}`

func BenchmarkValidJSON(b *testing.B) {
	body := []byte(benchBody)
	if !json.Valid(body) {
		b.Fatal("benchBody is not valid JSON")
	}
	b.Run("encoding/json.Valid", func(b *testing.B) {
		for b.Loop() {
			json.Valid(body)
		}
	})
	b.Run("rawjson.Valid", func(b *testing.B) {
		for b.Loop() {
			Valid(body)
		}
	})
}
