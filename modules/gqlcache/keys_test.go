package gqlcache

import (
	"testing"
)

func TestJSONMember(t *testing.T) {
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
		v, found, ok := jsonMember([]byte(c.doc), "variables")
		if string(v) != c.want || found != c.found || ok != c.ok {
			t.Errorf("%s: got %q %v %v, want %q %v %v", c.doc, v, found, ok, c.want, c.found, c.ok)
		}
	}
}

func TestJSONMemberDoesNotAllocate(t *testing.T) {
	doc := []byte(`{"query":"query Q($id: ID!) { bill(id: $id) { title } }","variables":{"id":"hr-118-1"},"operationName":"Q"}`)
	if n := testing.AllocsPerRun(100, func() { jsonMember(doc, "variables") }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

func TestTagList(t *testing.T) {
	var got []string
	for tag := range (tagList{csv: "bills, ,members,"}).each {
		got = append(got, tag)
	}
	if len(got) != 2 || got[0] != "bills" || got[1] != "members" {
		t.Fatal(got)
	}
}
