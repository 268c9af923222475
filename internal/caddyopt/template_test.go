package caddyopt

import (
	"errors"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// testReplacer holds a string, an empty string, a nil, an int and an error.
func testReplacer() *caddy.Replacer {
	repl := caddy.NewEmptyReplacer()
	repl.Set("civic.key_id", "key-1")
	repl.Set("civic.tier", "")
	repl.Set("civic.nil", nil)
	repl.Set("civic.n", 42)
	repl.Set("civic.err", errors.New("boom"))
	return repl
}

var templateCases = []struct {
	text        string
	placeholder string
	constant    bool
	value       string
	ok          bool
}{
	{"{civic.key_id}", "civic.key_id", false, "key-1", true},
	{"{civic.tier}", "civic.tier", false, "", true}, // held as "": set
	{"{civic.nil}", "civic.nil", false, "", false},  // held as nil: unset
	{"{civic.unset}", "civic.unset", false, "", false},
	{"{civic.n}", "civic.n", false, "42", true},
	{"{civic.err}", "civic.err", false, "boom", true},
	{"100/m", "", true, "100/m", true},
	{"", "", true, "", false},
	{`a\}b`, "", true, "a}b", true}, // an escaped brace, resolved once
	{"}", "", true, "}", true},
	{"tier-{civic.tier}", "", false, "tier-", true},
	{"{civic.key_id} {civic.n}", "", false, "key-1 42", true},
	{"{civic.tier}{civic.unset}", "", false, "", false},
	{"{}", "", false, "", false},
	{`{a\b}`, "", false, "", false},
	{`\{civic.key_id}`, "", false, "{civic.key_id}", true},
	{"{civic.key_id", "", false, "{civic.key_id", true},
}

func TestTemplate(t *testing.T) {
	repl := testReplacer()
	for _, c := range templateCases {
		tmpl := ParseTemplate(c.text)
		if tmpl.Placeholder() != c.placeholder || tmpl.Constant() != c.constant || tmpl.String() != c.text {
			t.Errorf("%q: placeholder %q constant %v string %q, want %q %v", c.text,
				tmpl.Placeholder(), tmpl.Constant(), tmpl.String(), c.placeholder, c.constant)
		}
		v, ok := tmpl.Lookup(repl)
		if v != c.value || ok != c.ok {
			t.Errorf("%q: Lookup = %q %v, want %q %v", c.text, v, ok, c.value, c.ok)
		}
		if got, want := tmpl.Expand(repl), repl.ReplaceAll(c.text, ""); got != want {
			t.Errorf("%q: Expand = %q, ReplaceAll gives %q", c.text, got, want)
		}
	}
}

func TestTemplateNilReplacer(t *testing.T) {
	for text, want := range map[string]string{"{civic.key_id}": "", "100/m": "100/m", "a-{civic.key_id}": "a-", "": ""} {
		if got := ParseTemplate(text).Expand(nil); got != want {
			t.Errorf("%q with no replacer: %q, want %q", text, got, want)
		}
	}
	if _, ok := ParseTemplate("{civic.key_id}").Lookup(nil); ok {
		t.Error("a placeholder is set without a replacer")
	}
	if got := StringPlaceholder(nil, "civic.key_id"); got != "" {
		t.Errorf("StringPlaceholder(nil) = %q", got)
	}
}

func TestStringPlaceholder(t *testing.T) {
	repl := testReplacer()
	for name, want := range map[string]string{"civic.key_id": "key-1", "civic.tier": "", "civic.nil": "",
		"civic.unset": "", "civic.n": ""} { // an int is not a string: ""
		if got := StringPlaceholder(repl, name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

// TestTemplateAllocations: a template that is one placeholder holding a
// string, or no placeholder, expands without allocating.
func TestTemplateAllocations(t *testing.T) {
	repl := testReplacer()
	for _, text := range []string{"{civic.key_id}", "{civic.tier}", "{civic.unset}", "100/m", `a\}b`} {
		tmpl := ParseTemplate(text)
		if n := testing.AllocsPerRun(100, func() { tmpl.Expand(repl) }); n != 0 {
			t.Errorf("%q: %v allocations", text, n)
		}
	}
	if n := testing.AllocsPerRun(100, func() { StringPlaceholder(repl, "civic.key_id") }); n != 0 {
		t.Errorf("StringPlaceholder: %v allocations", n)
	}
}

// FuzzTemplateExpand: whatever the text, Expand gives what ReplaceAll gives.
func FuzzTemplateExpand(f *testing.F) {
	for _, c := range templateCases {
		f.Add(c.text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		repl := testReplacer()
		if got, want := ParseTemplate(text).Expand(repl), repl.ReplaceAll(text, ""); got != want {
			t.Fatalf("%q: Expand = %q, ReplaceAll gives %q", text, got, want)
		}
	})
}

func BenchmarkTemplateExpand(b *testing.B) {
	repl := testReplacer()
	for _, text := range []string{"{civic.key_id}", "100/m", "tier-{civic.tier}"} {
		tmpl := ParseTemplate(text)
		b.Run(text, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tmpl.Expand(repl)
			}
		})
	}
}
