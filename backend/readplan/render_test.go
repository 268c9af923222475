package readplan

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/99designs/gqlgen/graphql"
)

// gqlgenString is a string as recordsd's gqlgen path answers it: graphql.MarshalString, then encoding/json's
// marshalling of the response's json.RawMessage data.
func gqlgenString(t *testing.T, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	graphql.MarshalString(s).MarshalGQL(&buf)
	out, err := json.Marshal(json.RawMessage(buf.Bytes()))
	if err != nil {
		t.Fatalf("json.Marshal(%q): %v", buf.Bytes(), err)
	}
	return out
}

// FuzzAppendString: appendString writes every string — control characters, quotes, HTML characters, line
// and paragraph separators, invalid UTF-8 — byte for byte as the gqlgen path does.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", `"quoted" \ back`, "tab\tnl\ncr\r", "\x00\x07\x1f\x7f", "<a href='x'>&amp;</a>",
		"sep\u2028para\u2029", "\xe2\x80", "\xe2\x80\xa8", "Ünïcödé ☃ 😀", "\xff\xfe invalid", "\u2027\u202a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := gqlgenString(t, s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %q, gqlgen path %q", s, got, want)
		}
		if got := appendString([]byte("x"), []byte(s)); !bytes.Equal(got[1:], want) {
			t.Fatalf("appendString(%q) as bytes = %q, gqlgen path %q", s, got[1:], want)
		}
	})
}
