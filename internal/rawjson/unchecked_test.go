package rawjson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestUniqueMember(t *testing.T) {
	for _, c := range []struct {
		doc, want string
		found, ok bool
	}{
		{`{"query":"{a}","variables":{"id":"x","n":[1,{"b":"}"}]}}`, `{"id":"x","n":[1,{"b":"}"}]}`, true, true},
		{` { "variables" : null , "query":"q"}`, `null`, true, true},
		{`{"query":"\"variables\"","operationName":"A"}`, ``, false, true},
		{`{"vari\u0061bles":{"a":1}}`, `{"a":1}`, true, true},
		{`{"variables":{"a":1},"variables":{"a":2}}`, ``, false, false},
		{`{"variables":"a\"}b"}`, `"a\"}b"`, true, true},
		{`{"variables":12.5e3}`, `12.5e3`, true, true},
		{`{}`, ``, false, true},
		{`[1]`, ``, false, false},
		{`{"variables":{"a":1}`, ``, false, false},
		{`{"variables"}`, ``, false, false},
		{``, ``, false, false},
	} {
		v, found, ok := UniqueMember([]byte(c.doc), "variables")
		if string(v) != c.want || found != c.found || ok != c.ok {
			t.Errorf("%s: got %q %v %v, want %q %v %v", c.doc, v, found, ok, c.want, c.found, c.ok)
		}
	}
}

func TestUniqueMemberDoesNotAllocate(t *testing.T) {
	doc := []byte(`{"query":"query Q($id: ID!) { bill(id: $id) { title } }","variables":{"id":"hr-118-1"},"operationName":"Q"}`)
	if n := testing.AllocsPerRun(100, func() { UniqueMember(doc, "variables") }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// BenchmarkUniqueMember: graphql_cache looks for a top-level "errors" member in every response it may store.
func BenchmarkUniqueMember(b *testing.B) {
	item := `{"id":"hr-118-1","congress":118,"type":"hr","number":1,"title":"Lower Energy Costs Act \"LECA\"","latestAction":{"date":"2023-03-30","text":"Received in the Senate."},"sponsors":[{"bioguideId":"S000344","name":"Scalise, Steve","party":"R","state":"LA"}]}`
	doc := []byte(`{"data":{"bills":{"items":[` + strings.Repeat(item+",", 19) + item + `],"nextCursor":"eyJpZCI6MjB9"}}}`)
	for b.Loop() {
		if _, found, ok := UniqueMember(doc, "errors"); found || !ok {
			b.Fatal("misread")
		}
	}
}

// FuzzUniqueMember: on a valid JSON object, UniqueMember answers what encoding/json reads of it: the member's
// raw value when the name occurs once, found false when it does not occur, ok false only when it occurs twice.
func FuzzUniqueMember(f *testing.F) {
	for _, s := range []string{
		`{"query":"{a}","variables":{"id":"x","n":[1,{"b":"}"}]}}`, ` { "variables" : null , "query":"q"}`,
		`{"query":"\"variables\"","operationName":"A"}`, `{"vari\u0061bles":{"a":1}}`, `{"variables":{"a":1},"variables":{"a":2}}`,
		`{"variables":"a\"}b"}`, `{"variables":12.5e3}`, `{}`, `[1]`, `{"variables":{"a":1}`, `{"variables"}`, ``,
		`{"data":null,"errors":[{"message":"x"}]}`, `{"variables":-0.5E+2 ,"x":[]}`, `{"variables":"\\\\"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		value, found, ok := UniqueMember(doc, "variables")
		if !json.Valid(doc) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(doc))
		if tok, _ := dec.Token(); tok != json.Delim('{') {
			if ok {
				t.Fatalf("%q is no object, yet ok", doc)
			}
			return
		}
		var times int
		var want json.RawMessage
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				t.Fatal(err)
			}
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				t.Fatal(err)
			}
			if tok == "variables" {
				times++
				want = raw
			}
		}
		switch {
		case times > 1 && ok:
			t.Fatalf("%q: a member given %d times, yet ok", doc, times)
		case times <= 1 && !ok:
			t.Fatalf("%q: not ok", doc)
		case times <= 1 && (found != (times == 1) || !bytes.Equal(value, want)):
			t.Fatalf("%q: got %q (found %v), encoding/json reads %q", doc, value, found, want)
		}
	})
}
