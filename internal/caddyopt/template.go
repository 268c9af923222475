package caddyopt

import (
	"strings"

	"github.com/caddyserver/caddy/v2"
)

// Template is an option value that may hold Caddy placeholders, such as
// "{civic.key_id}", "tier-{civic.tier}" or "100/m", read once at provision
// so that a request pays for what the value is (docs/design.md D44):
//
//   - one placeholder and nothing else: one repl.Get, no allocation when the
//     value is a string (the {civic.*} and {graphql.*} values are);
//   - no placeholder: the text itself, no replacer call;
//   - anything else: repl.ReplaceAll.
//
// Every form expands to what repl.ReplaceAll(text, "") gives, unset
// placeholders as "". The zero Template is the empty text.
type Template struct {
	text     string // as written
	name     string // the placeholder, when text is exactly one
	constant bool   // text has no placeholder
	value    string // text with its escaped braces resolved, when constant
}

// ParseTemplate reads text once. It never fails: a text that is not a
// well-formed placeholder expands as Caddy expands it.
func ParseTemplate(text string) Template {
	t := Template{text: text}
	switch {
	case !strings.Contains(text, "{"):
		t.constant = true
		// Only "\}" can change here; no placeholder is looked up.
		t.value = caddy.NewEmptyReplacer().ReplaceAll(text, "")
	case len(text) > 2 && text[0] == '{' && text[len(text)-1] == '}' &&
		!strings.ContainsAny(text[1:len(text)-1], `{}\`):
		t.name = text[1 : len(text)-1]
	}
	return t
}

// String is the text as written (for logs and errors).
func (t Template) String() string { return t.text }

// Placeholder is the placeholder's name when the template is exactly one
// placeholder ("civic.key_id" for "{civic.key_id}"), else "".
func (t Template) Placeholder() string { return t.name }

// Constant reports whether the template holds no placeholder: it expands to
// the same text for every request.
func (t Template) Constant() bool { return t.constant }

// Expand is the template's value for the request whose replacer is repl: the
// result of repl.ReplaceAll(text, ""), without its cost when the template is
// one placeholder or none. A nil repl holds no placeholder.
func (t Template) Expand(repl *caddy.Replacer) string {
	s, _ := t.Lookup(repl)
	return s
}

// Lookup is Expand that also tells "unset" from "empty": for a template that
// is one placeholder, ok is false when repl does not hold it or holds nil,
// and true when it holds a value, "" included (a tier entitled to nothing is
// not a tier unknown). For any other template, ok is whether the value is
// not empty.
func (t Template) Lookup(repl *caddy.Replacer) (value string, ok bool) {
	switch {
	case t.constant:
		return t.value, t.value != ""
	case repl == nil:
		if t.name != "" {
			return "", false
		}
		repl = caddy.NewEmptyReplacer()
	case t.name != "":
		v, held := repl.Get(t.name)
		if !held || v == nil {
			return "", false
		}
		if s, isString := v.(string); isString {
			return s, true
		}
		return caddy.ToString(v), true
	}
	s := repl.ReplaceAll(t.text, "")
	return s, s != ""
}

// StringPlaceholder is the value of placeholder name when it is a string;
// "" when repl does not hold it, holds nil or holds another type. It reads
// the {civic.*} and {graphql.*} values, which are strings, without the
// conversion Expand makes of any other type.
func StringPlaceholder(repl *caddy.Replacer, name string) string {
	if repl == nil {
		return ""
	}
	v, _ := repl.Get(name)
	s, _ := v.(string)
	return s
}
