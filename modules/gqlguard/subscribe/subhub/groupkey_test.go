package subhub

import "testing"

// TestGroupKey: what makes two subscriptions identical within a scope.
func TestGroupKey(t *testing.T) {
	key := func(scope, payload string) string {
		t.Helper()
		k, err := groupKey(scope, []byte(payload))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	base := key("org:a", `{"query":"subscription { x }","variables":{"a":1,"b":[2,{"d":1,"c":2}]}}`)
	same := map[string]string{
		"members in another order": `{"variables":{"b":[2,{"c":2,"d":1}],"a":1},"query":"subscription { x }"}`,
		"extensions ignored":       `{"query":"subscription { x }","variables":{"a":1,"b":[2,{"d":1,"c":2}]},"extensions":{"x":1}}`,
		"whitespace":               `{ "query" : "subscription { x }" , "variables" : { "a" : 1 , "b" : [ 2 , { "d" : 1 , "c" : 2 } ] } }`,
	}
	for name, p := range same {
		if key("org:a", p) != base {
			t.Errorf("%s: another group", name)
		}
	}
	differ := map[string][2]string{
		"another scope":          {"org:b", `{"query":"subscription { x }","variables":{"a":1,"b":[2,{"d":1,"c":2}]}}`},
		"another document":       {"org:a", `{"query":"subscription { y }","variables":{"a":1,"b":[2,{"d":1,"c":2}]}}`},
		"another number":         {"org:a", `{"query":"subscription { x }","variables":{"a":1.0,"b":[2,{"d":1,"c":2}]}}`},
		"another operation name": {"org:a", `{"query":"subscription { x }","operationName":"X","variables":{"a":1,"b":[2,{"d":1,"c":2}]}}`},
	}
	for name, c := range differ {
		if key(c[0], c[1]) == base {
			t.Errorf("%s: the same group", name)
		}
	}
	if key("k", `{"query":"subscription { x }"}`) != key("k", `{"query":"subscription { x }","variables":null}`) {
		t.Error("absent and null variables differ")
	}
	if _, err := groupKey("k", []byte(`{"query":`)); err == nil {
		t.Error("a broken payload has a key")
	}
}
