package gqlguard

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
)

// The decisions on an admitted, compiled operation: entitlements (403) and
// the document limits (docs/design.md D12).

// overAny reports whether violations would list anything.
func (g *Guard) overAny(doc *compiledDoc, op *compiledOp, cost int64) bool {
	m := op.measures
	return doc.tokenOver != nil || m.depth > g.MaxDepth || m.aliases > g.MaxAliases ||
		m.rootFields > g.MaxRootFields || m.directives > g.MaxDirectives || cost > g.MaxCost
}

// ownedFamilies returns the families the caller owns and whether they are
// checked at all. With no families configured, an entitlement placeholder
// that is not set or nil (e.g. no civic_auth in front), or a
// multi-placeholder expression that resolves to empty, nothing is checked.
// A placeholder set to the empty string (a tier entitled to no family) owns
// nothing.
func (g *Guard) ownedFamilies(repl *caddy.Replacer) (owned string, check bool) {
	if len(g.fieldFamily) == 0 || repl == nil {
		return "", false
	}
	if g.entKey != "" {
		v, ok := repl.Get(g.entKey)
		if !ok || v == nil {
			return "", false
		}
		if s, isString := v.(string); isString {
			return s, true
		}
		return fmt.Sprint(v), true
	}
	owned = strings.TrimSpace(repl.ReplaceAll(g.Entitlements, ""))
	return owned, owned != ""
}

// entitled reports whether the caller owns every family the operation
// touches. A root field in no family is refused while checking: a field
// forgotten in the configuration must not bypass entitlements.
// Introspection fields belong to no family and are never refused here.
func entitled(owned string, check bool, f opFamilies) bool {
	if !check {
		return true
	}
	if f.orphan {
		return false
	}
	for _, fam := range f.list {
		if !listContains(owned, fam) {
			return false
		}
	}
	return true
}

// refusedFamilies names the families of f the caller does not own,
// comma-separated in name order (f.list is sorted): what a not-entitled
// refusal tells (docs/design.md D41). "" when only a root field in no family
// was refused: no tier owns it.
func refusedFamilies(owned string, f opFamilies) string {
	var out strings.Builder
	for _, fam := range f.list {
		if listContains(owned, fam) {
			continue
		}
		if out.Len() > 0 {
			out.WriteByte(',')
		}
		out.WriteString(fam)
	}
	return out.String()
}

// listContains reports whether the comma-separated list holds item.
func listContains(list, item string) bool {
	for list != "" {
		var part string
		part, list, _ = strings.Cut(list, ",")
		if strings.TrimSpace(part) == item {
			return true
		}
	}
	return false
}

// violations lists every limit the operation exceeds.
func (g *Guard) violations(doc *compiledDoc, op *compiledOp, cost int64) []gqlError {
	var errs []gqlError
	loc := locationsOf(op.pos)
	m := op.measures
	if doc.tokenOver != nil {
		errs = append(errs, gqlError{Message: tooManyTokensMessage(g.MaxTokens), Locations: locationsOf(doc.tokenOver), Code: codeTooManyTokens})
	}
	check := func(v, max int64, code, what string) {
		if v > max {
			errs = append(errs, gqlError{
				Message:   fmt.Sprintf("%s %s exceeds the maximum of %d", what, formatCount(v), max),
				Locations: loc, Code: code,
			})
		}
	}
	check(m.depth, g.MaxDepth, codeTooDeep, "Query depth")
	check(m.aliases, g.MaxAliases, codeTooManyAliases, "Alias count")
	check(m.rootFields, g.MaxRootFields, codeTooManyRootFields, "Root field count")
	check(m.directives, g.MaxDirectives, codeTooManyDirectives, "Directive count")
	check(cost, g.MaxCost, codeTooCostly, "Query cost")
	return errs
}

func formatCount(v int64) string {
	if v >= saturated {
		return "(overflowing)"
	}
	return strconv.FormatInt(v, 10)
}
