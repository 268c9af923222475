package rawjson

import (
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
