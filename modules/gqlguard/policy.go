package gqlguard

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"

	"github.com/civicgate/civicgate/modules/gqlguard/analysis"
	"github.com/civicgate/civicgate/modules/gqlguard/document"
)

// The decisions on an admitted, compiled operation: entitlements (403) and
// the document limits (docs/design.md D12).

// overAny reports whether violations would list anything.
func (g *Guard) overAny(doc *document.Doc, op *document.Operation, cost, maxDepth int64) bool {
	m := op.Measures
	return doc.TokenOver != nil || m.Depth > maxDepth || m.Aliases > g.MaxAliases ||
		m.RootFields > g.MaxRootFields || m.Directives > g.MaxDirectives || cost > g.MaxCost
}

// ownedFamilies returns the families the caller owns and whether they are
// checked at all. With no families configured, an entitlement placeholder
// that is not set or nil (e.g. no civic_auth in front), or a
// multi-placeholder expression that resolves to empty, nothing is checked.
// A placeholder set to the empty string (a tier entitled to no family) owns
// nothing.
func (g *Guard) ownedFamilies(repl *caddy.Replacer) (owned string, check bool) {
	if !g.fieldFamily.Configured() || repl == nil {
		return "", false
	}
	owned, set := g.entitlements.Lookup(repl)
	if g.entitlements.Placeholder() == "" {
		owned = strings.TrimSpace(owned)
		return owned, owned != ""
	}
	return owned, set
}

// violations lists every limit the operation exceeds.
func (g *Guard) violations(doc *document.Doc, op *document.Operation, cost, maxDepth int64) []document.Error {
	var errs []document.Error
	loc := document.LocationsOf(op.Pos)
	m := op.Measures
	if doc.TokenOver != nil {
		errs = append(errs, document.Error{Message: document.TooManyTokensMessage(g.MaxTokens), Locations: document.LocationsOf(doc.TokenOver), Code: document.CodeTooManyTokens})
	}
	check := func(v, max int64, code, what string) {
		if v > max {
			errs = append(errs, document.Error{
				Message:   fmt.Sprintf("%s %s exceeds the maximum of %d", what, formatCount(v), max),
				Locations: loc, Code: code,
			})
		}
	}
	check(m.Depth, maxDepth, codeTooDeep, "Query depth")
	check(m.Aliases, g.MaxAliases, codeTooManyAliases, "Alias count")
	check(m.RootFields, g.MaxRootFields, codeTooManyRootFields, "Root field count")
	check(m.Directives, g.MaxDirectives, codeTooManyDirectives, "Directive count")
	check(cost, g.MaxCost, codeTooCostly, "Query cost")
	return errs
}

func formatCount(v int64) string {
	if v >= analysis.Saturated {
		return "(overflowing)"
	}
	return strconv.FormatInt(v, 10)
}
