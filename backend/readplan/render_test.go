package readplan

import (
	"bytes"
	"encoding/json"
	"strings"
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
	// appendString skips eight plain bytes at a time: every special byte at every offset of a word, and at
	// the end, where a word no longer fits.
	for _, special := range []string{"\"", "\\", "<", ">", "&", "\x00", "\x1f", "\n", "\u2028", "\u2029", "\xe2", "é", "\x7f", " "} {
		for at := range 17 {
			f.Add(strings.Repeat("a", at) + special + strings.Repeat("b", 16-at))
		}
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

// BenchmarkAppendString: a bill title as the seed writes them (long, plain ASCII with a few specials).
func BenchmarkAppendString(b *testing.B) {
	title := []byte(`To amend the Internal Revenue Code of 1986 to provide a credit for "qualified" expenses & for other purposes, and to extend the authorization of appropriations for the program <through 2030>.`)
	dst := make([]byte, 0, 1024)
	b.SetBytes(int64(len(title)))
	for b.Loop() {
		dst = appendString(dst[:0], title)
	}
}

// TestAppendStringDoesNotCopy: appendString reads its argument in place; a string conversion that copied
// a []byte would cost an allocation per value rendered.
func TestAppendStringDoesNotCopy(t *testing.T) {
	b := []byte(strings.Repeat("a plain title of some length ", 8))
	dst := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { dst = appendString(dst[:0], b) }); n != 0 {
		t.Errorf("appendString([]byte) allocates %v times per call", n)
	}
	str := string(b)
	if n := testing.AllocsPerRun(100, func() { dst = appendString(dst[:0], str) }); n != 0 {
		t.Errorf("appendString(string) allocates %v times per call", n)
	}
}
