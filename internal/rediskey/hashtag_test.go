package rediskey

import (
	"strings"
	"testing"
)

// TestHashTag: every key gets a non-empty tag without braces, and no two
// keys share one.
func TestHashTag(t *testing.T) {
	seen := map[string]string{}
	for _, k := range []string{"abc", "", "{", "}", "%", "%7B", "a{b}c", "k", "key_01", "jwt:sub:auth0|x"} {
		tag := HashTag(k)
		if tag == "" || strings.ContainsAny(tag, "{}") {
			t.Fatalf("HashTag(%q) = %q", k, tag)
		}
		if prev, dup := seen[tag]; dup {
			t.Fatalf("%q and %q share the tag %q", prev, k, tag)
		}
		seen[tag] = k
	}
	if HashTag("key_01") != "key_01" {
		t.Error("a plain key is not kept as it is")
	}
}
