package gqlguard

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
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid %v", s, got, want)
		}
	}
}

// FuzzValidJSON: validJSON and encoding/json.Valid agree on every input.
func FuzzValidJSON(f *testing.F) {
	for _, s := range validJSONSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}

func BenchmarkValidJSON(b *testing.B) {
	body := []byte(`{"query":` + jsonString(benchBillsQuery) + `,"variables":{"congress":118,"cursor":null},"operationName":"Bills"}`)
	b.Run("encoding/json.Valid", func(b *testing.B) {
		for b.Loop() {
			json.Valid(body)
		}
	})
	b.Run("validJSON", func(b *testing.B) {
		for b.Loop() {
			validJSON(body)
		}
	})
}
