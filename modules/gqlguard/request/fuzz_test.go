package request

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeRequest: the decoder never panics, and whatever it accepts is a
// single valid JSON object. Seeds: testdata/fuzz/FuzzDecodeRequest.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"query":"{ bills { nextCursor } }"}`,
		`{"query":"query A($n: Int) { bills(input: {limit: $n}) { nextCursor } }","variables":{"n":3},"operationName":"A"}`,
		`{"query":"{ a }","variables":null,"operationName":null,"extensions":{"persistedQuery":{"version":1}}}`,
		`{"query":"x","query":"y"}`,
		`{"query":1}`, `[]`, `{`, `{"query":"\ud800"}`, "{\"query\":\"\xff\"}", `{"query":"q"} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeRequest(body)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		var obj map[string]any
		if err := json.Unmarshal(body, &obj); err != nil {
			t.Fatalf("accepted a non-object: %v", err)
		}
		if q, ok := obj["query"].(string); !ok || q != req.Query {
			t.Fatalf("query %q, decoded %q", obj["query"], req.Query)
		}
	})
}
