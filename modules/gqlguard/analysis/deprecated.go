package analysis

import (
	"slices"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
)

// DeprecatedCoordinates lists the schema coordinates schema marks
// @deprecated, sorted: "Type.field", "Type.field(arg:)", "Input.field",
// "Enum.VALUE" — the coordinates an OperationShape reports as Deprecated
// (docs/design.md D69). The schema's introspection types are skipped.
func DeprecatedCoordinates(schema *ast.Schema) []string {
	var out []string
	for name, def := range schema.Types {
		if strings.HasPrefix(name, "__") {
			continue
		}
		for _, f := range def.Fields {
			if f.Directives.ForName("deprecated") != nil {
				out = append(out, name+"."+f.Name)
			}
			for _, a := range f.Arguments {
				if a.Directives.ForName("deprecated") != nil {
					out = append(out, name+"."+f.Name+"("+a.Name+":)")
				}
			}
		}
		for _, v := range def.EnumValues {
			if v.Directives.ForName("deprecated") != nil {
				out = append(out, name+"."+v.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// DefaultDeprecationReason is the reason the GraphQL specification gives
// @deprecated when its reason argument is left out.
const DefaultDeprecationReason = "No longer supported"

// DeprecationReason is the reason text of a @deprecated directive: its
// reason argument's string, DefaultDeprecationReason when the argument is
// left out, "" when it is null (docs/design.md D77). It is text PostgreSQL
// can store: a NUL ("\u0000" in the schema) or a byte that is no UTF-8
// becomes U+FFFD, so one schema's reason cannot fail every usage flush.
func DeprecationReason(d *ast.Directive) string {
	a := d.Arguments.ForName("reason")
	if a == nil || a.Value == nil {
		return DefaultDeprecationReason
	}
	if a.Value.Kind == ast.NullValue {
		return ""
	}
	return strings.ReplaceAll(strings.ToValidUTF8(a.Value.Raw, "\uFFFD"), "\x00", "\uFFFD")
}
