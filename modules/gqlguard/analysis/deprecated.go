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
