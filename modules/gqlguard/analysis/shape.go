package analysis

import (
	"slices"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
)

// Shape (docs/design.md D69): what one validated operation reads of the
// schema, as schema coordinates, and its text with the caller's literal
// values removed. It is computed once per compiled document and shared by
// every request that sends the document.

// MaxCoordinates bounds the coordinates kept for one operation. The guard's
// document limits already bound them (every coordinate is named by a token
// of the document); the cap keeps what usage stores per operation small.
// The coordinates over it are dropped, in sorted order, after the
// deprecated ones are kept, and counted (Shape.Dropped).
const MaxCoordinates = 512

// Shape is the schema coordinates an operation touches and its normalized
// text.
type Shape struct {
	// Coordinates are sorted and unique: "Type.field", "Type.field(arg:)",
	// "Input.field", "Enum.VALUE"; at most MaxCoordinates.
	Coordinates []string
	// Deprecated are the Coordinates the schema marks @deprecated, sorted;
	// nil when none. Never dropped by the cap.
	Deprecated []string
	// DeprecationReasons are the @deprecated(reason:) texts of Deprecated,
	// in its order (DeprecationReason).
	DeprecationReasons []string
	// Dropped is the number of coordinates over MaxCoordinates.
	Dropped int
	// Normalized is the operation and the fragments it spreads, in the
	// guard's normal form (gqlparser's compacted formatter), with literal
	// values replaced (normalizeValue).
	Normalized string
}

// OperationShape computes the shape of op, an operation of the validated
// document doc, against schema (the one doc was validated against: every
// field, argument and value carries its definition).
func OperationShape(doc *ast.QueryDocument, op *ast.OperationDefinition, schema *ast.Schema) Shape {
	s := shapeWalk{
		schema:    schema,
		fragments: make(map[string]*ast.FragmentDefinition, len(doc.Fragments)),
		reached:   map[string]bool{},
		coords:    map[string]bool{},
		deprec:    map[string]string{},
	}
	for _, f := range doc.Fragments {
		if _, dup := s.fragments[f.Name]; !dup {
			s.fragments[f.Name] = f
		}
	}
	for _, v := range op.VariableDefinitions {
		s.value(v.DefaultValue)
	}
	s.selectionSet(op.SelectionSet)
	deprecated := sortedKeys(s.deprec)
	var reasons []string
	if len(deprecated) > 0 {
		reasons = make([]string, len(deprecated))
		for i, c := range deprecated {
			reasons[i] = s.deprec[c]
		}
	}
	return Shape{
		Coordinates:        s.capped(),
		Deprecated:         deprecated,
		DeprecationReasons: reasons,
		Dropped:            max(len(s.coords)-MaxCoordinates, 0),
		Normalized:         normalizedText(doc, op, s.reached),
	}
}

// shapeWalk collects the coordinates of one operation.
type shapeWalk struct {
	schema    *ast.Schema
	fragments map[string]*ast.FragmentDefinition
	reached   map[string]bool // fragments spread, each walked once
	coords    map[string]bool
	deprec    map[string]string // deprecated coordinate → its reason
}

func (s *shapeWalk) add(coord string, directives ast.DirectiveList) {
	s.coords[coord] = true
	if d := directives.ForName("deprecated"); d != nil {
		if _, seen := s.deprec[coord]; !seen {
			s.deprec[coord] = DeprecationReason(d)
		}
	}
}

func (s *shapeWalk) selectionSet(set ast.SelectionSet) {
	for _, sel := range set {
		switch sel := sel.(type) {
		case *ast.Field:
			s.field(sel)
		case *ast.InlineFragment:
			s.selectionSet(sel.SelectionSet)
		case *ast.FragmentSpread:
			if s.reached[sel.Name] {
				continue
			}
			s.reached[sel.Name] = true
			if def := s.fragments[sel.Name]; def != nil {
				s.selectionSet(def.SelectionSet)
			}
		}
	}
}

// field adds a field, its arguments and their values. Introspection
// (__typename, __schema, __type) reads no coordinate of the schema's own.
func (s *shapeWalk) field(f *ast.Field) {
	if strings.HasPrefix(f.Name, "__") || f.Definition == nil || f.ObjectDefinition == nil {
		return
	}
	coord := f.ObjectDefinition.Name + "." + f.Name
	s.add(coord, f.Definition.Directives)
	for _, a := range f.Arguments {
		if def := f.Definition.Arguments.ForName(a.Name); def != nil {
			s.add(coord+"("+a.Name+":)", def.Directives)
		}
		s.value(a.Value)
	}
	s.selectionSet(f.SelectionSet)
}

// value adds the input fields an object literal names and the enum values
// a literal holds; a variable's value is never looked at.
func (s *shapeWalk) value(v *ast.Value) {
	if v == nil {
		return
	}
	switch v.Kind {
	case ast.EnumValue:
		if def := v.Definition; def != nil && def.Kind == ast.Enum {
			if ev := def.EnumValues.ForName(v.Raw); ev != nil {
				s.add(def.Name+"."+v.Raw, ev.Directives)
			}
		}
	case ast.ListValue:
		for _, c := range v.Children {
			s.value(c.Value)
		}
	case ast.ObjectValue:
		def := v.Definition
		for _, c := range v.Children {
			if def != nil && def.Kind == ast.InputObject {
				if fd := def.Fields.ForName(c.Name); fd != nil {
					s.add(def.Name+"."+c.Name, fd.Directives)
				}
			}
			s.value(c.Value)
		}
	}
}

// capped is the sorted coordinates, at most MaxCoordinates: every
// deprecated one, then the others in order.
func (s *shapeWalk) capped() []string {
	all := sortedKeys(s.coords)
	if len(all) <= MaxCoordinates {
		return all
	}
	kept := sortedKeys(s.deprec)
	room := MaxCoordinates - len(kept)
	for _, c := range all {
		if room <= 0 {
			break
		}
		if _, deprecated := s.deprec[c]; !deprecated {
			kept = append(kept, c)
			room--
		}
	}
	slices.Sort(kept)
	return slices.Clip(kept)
}

func sortedKeys[V any](m map[string]V) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
