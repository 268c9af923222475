package httpapi

import (
	"reflect"
	"testing"
)

// FuzzDecodeCommonRequest: whenever the one-pass decoder answers, it answers exactly what the reference
// decoder answers (the same query, operation name and variables, json.Number included); the bodies it
// declines are the reference's alone.
func FuzzDecodeCommonRequest(f *testing.F) {
	for _, s := range []string{
		`{"query":"{ bills { items { id } } }"}`,
		`{"query":"query Q($n: Int) {\n  bills(input: {limit: $n}) { items { id } }\n}","variables":{"n":25},"operationName":"Q"}`,
		`{"query":"{ __typename }","variables":null,"operationName":null,"extensions":{"persistedQuery":{"version":1,"sha256Hash":"abc"}}}`,
		`{"query":"a","query":"b"}`, `{"query":null,"query":"a"}`, `{"query":"a","query":null}`,
		`{"Query":"a"}`, `{"quer\u0079":"a"}`, `{"query":"a"} `, `{"query":"a"} {}`, `{"query":"a"}x`, `{}`, `null`, `[]`, ``,
		`{"query":"caf\u00e9 \"x\" \\ \/"}`, "{\"query\":\"raw\ttab\"}", "{\"query\":\"\xff\xfe\"}", `{"query":"ünï"}`,
		`{"query":"a","variables":{"s":"}","t":["{",{"u":"\""}]}}`, `{"query":"a","variables":{"a":}}`, `{"query":"a","variables":[]}`,
		`{"query":"a","variables":{}}`, `{"query":"a","extensions":[1]}`, `{"query":"a","extensions":{"x":tru}}`,
		`{"query":"a","operationName":7}`, `{"query":1}`, `{"query":"a",}`, `{ "query" : "a" , "variables" : { "n" : 1.50e3 } }`,
		`{"query":"a","variables":{"big":123456789012345678901234567890}}`, `{"query":"a","variables":nullx}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := decodeCommonRequest(body)
		if !ok {
			return
		}
		want, msg := decodeRequestReference(body)
		if want == nil {
			t.Fatalf("%q: one-pass decoded %+v, the reference answers %q", body, got, msg)
		}
		if got.Query != want.Query || got.OperationName != want.OperationName || !reflect.DeepEqual(got.Variables, want.Variables) {
			t.Fatalf("%q: one-pass %+v, reference %+v", body, got, want)
		}
	})
}

// TestDecodeCommonRequestTakesTheUsualBodies: the fast path is taken for what clients send (a bare query;
// a query with escapes, variables, an operation name and APQ extensions), not only declined.
func TestDecodeCommonRequestTakesTheUsualBodies(t *testing.T) {
	for _, body := range []string{
		`{"query":"{ bills { items { id } } }"}`,
		`{"query":"query Q($n: Int) {\n  bills(input: {limit: $n}) { items { id } }\n}","variables":{"n":25},"operationName":"Q","extensions":{"persistedQuery":{"version":1,"sha256Hash":"abc"}}}`,
	} {
		if _, ok := decodeCommonRequest([]byte(body)); !ok {
			t.Errorf("declined %s", body)
		}
	}
}

func BenchmarkDecodeGraphQLRequest(b *testing.B) {
	body := []byte(`{"query":"query Page { bills(input: {limit: 25}) { items { id congress type number officialTitle introducedDate memberName committeeNames } nextCursor } }"}`)
	b.Run("one-pass", func(b *testing.B) {
		for b.Loop() {
			decodeGraphQLRequest(body)
		}
	})
	b.Run("reference", func(b *testing.B) {
		for b.Loop() {
			decodeRequestReference(body)
		}
	})
}
