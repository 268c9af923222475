package tooldef

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/civicgate/civicgate/modules/gqlguard/analysis"
)

// The output schema describes structuredContent, the GraphQL response's data
// object, from the operation's selection set: one property per response key
// (the alias when there is one), fragments and inline fragments merged into
// the object they apply to, __typename a const (or an enum over the possible
// types). Scalars map as in the input schema (Int without bounds), a nullable
// type adds "null", a field under @skip or @include is not required. A field
// of an interface or union type is the anyOf of the shapes of its possible
// types; possible types whose shapes are alike but for __typename share one
// shape. Object shapes do not set additionalProperties: the schema says what
// the tool returns, it is not used to refuse an answer.

// maxOutputNodes bounds an output schema: fragments spread into one another
// can expand a short document into a very large shape.
const maxOutputNodes = 10000

var errOutputTooLarge = errors.New("the selection set expands to an output schema over 10000 nodes")

type outputBuilder struct {
	schema *ast.Schema
	frags  map[string]*ast.FragmentDefinition
	nodes  int
}

// outputSchema returns the output schema of op (of a validated document).
func outputSchema(s *ast.Schema, doc *ast.QueryDocument, op *ast.OperationDefinition) (*jsonschema.Schema, error) {
	b := &outputBuilder{schema: s, frags: map[string]*ast.FragmentDefinition{}}
	for _, f := range doc.Fragments {
		b.frags[f.Name] = f
	}
	root := analysis.RootType(s, op.Operation)
	if root == nil {
		return nil, fmt.Errorf("the schema has no %s type", op.Operation)
	}
	out := b.object(op.SelectionSet, root, &jsonschema.Schema{Type: "string", Const: jsonschema.Ptr[any](root.Name)})
	if b.nodes > maxOutputNodes {
		return nil, errOutputTooLarge
	}
	return out, nil
}

// collected is every field selected under one response key.
type collected struct {
	key         string
	fields      []*ast.Field
	conditional bool // every selection of the key is under @skip/@include
}

// object is the shape of the concrete object type t under sel; typename is
// the schema of its __typename.
func (b *outputBuilder) object(sel ast.SelectionSet, t *ast.Definition, typename *jsonschema.Schema) *jsonschema.Schema {
	b.nodes++
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	var keys []*collected
	b.collect(sel, t, false, &keys, 0)
	for _, k := range keys {
		if b.nodes > maxOutputNodes {
			break
		}
		f := k.fields[0]
		var prop *jsonschema.Schema
		if f.Name == "__typename" {
			prop = typename
		} else {
			fd := t.Fields.ForName(f.Name)
			if fd == nil { // validation rules this out
				continue
			}
			var sub ast.SelectionSet
			for _, g := range k.fields {
				sub = append(sub, g.SelectionSet...)
			}
			prop = b.value(fd.Type, sub)
			if fd.Description != "" {
				prop.Description = fd.Description
			}
		}
		s.Properties[k.key] = prop
		s.PropertyOrder = append(s.PropertyOrder, k.key)
		if !k.conditional {
			s.Required = append(s.Required, k.key)
		}
	}
	return s
}

// collect gathers the fields of sel that apply to the object type t, by
// response key in document order; fragments whose type condition t does not
// satisfy are left out.
func (b *outputBuilder) collect(sel ast.SelectionSet, t *ast.Definition, conditional bool, keys *[]*collected, depth int) {
	if depth > 100 { // fragment cycles are refused by validation; stay finite anyway
		return
	}
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			key := s.Alias
			if key == "" {
				key = s.Name
			}
			cond := conditional || hasCondition(s.Directives)
			i := slices.IndexFunc(*keys, func(c *collected) bool { return c.key == key })
			if i < 0 {
				*keys = append(*keys, &collected{key: key, conditional: cond})
				i = len(*keys) - 1
			}
			c := (*keys)[i]
			c.fields = append(c.fields, s)
			c.conditional = c.conditional && cond
		case *ast.InlineFragment:
			if b.applies(s.TypeCondition, t) {
				b.collect(s.SelectionSet, t, conditional || hasCondition(s.Directives), keys, depth+1)
			}
		case *ast.FragmentSpread:
			if f := b.frags[s.Name]; f != nil && b.applies(f.TypeCondition, t) {
				b.collect(f.SelectionSet, t, conditional || hasCondition(s.Directives), keys, depth+1)
			}
		}
	}
}

func hasCondition(d ast.DirectiveList) bool {
	return d.ForName("skip") != nil || d.ForName("include") != nil
}

// applies reports whether a fragment on cond applies to the object type t.
func (b *outputBuilder) applies(cond string, t *ast.Definition) bool {
	if cond == "" || cond == t.Name {
		return true
	}
	def := b.schema.Types[cond]
	if def == nil {
		return false
	}
	return slices.ContainsFunc(b.schema.GetPossibleTypes(def), func(p *ast.Definition) bool { return p.Name == t.Name })
}

// value is the schema of an output value of type typ selected with sel.
func (b *outputBuilder) value(typ *ast.Type, sel ast.SelectionSet) *jsonschema.Schema {
	b.nodes++
	var s *jsonschema.Schema
	if typ.Elem != nil {
		s = &jsonschema.Schema{Type: "array", Items: b.value(typ.Elem, sel)}
	} else {
		s = b.named(b.schema.Types[typ.NamedType], sel)
	}
	if !typ.NonNull {
		makeNullable(s)
	}
	return s
}

func (b *outputBuilder) named(def *ast.Definition, sel ast.SelectionSet) *jsonschema.Schema {
	if def == nil {
		return &jsonschema.Schema{}
	}
	switch def.Kind {
	case ast.Scalar:
		switch def.Name {
		case "Int":
			return &jsonschema.Schema{Type: "integer"}
		case "Float":
			return &jsonschema.Schema{Type: "number"}
		case "String", "ID":
			return &jsonschema.Schema{Type: "string"}
		case "Boolean":
			return &jsonschema.Schema{Type: "boolean"}
		}
		return &jsonschema.Schema{Description: customScalarOutputText(def)}
	case ast.Enum:
		s := &jsonschema.Schema{Type: "string"}
		for _, v := range def.EnumValues {
			s.Enum = append(s.Enum, v.Name)
		}
		return s
	case ast.Object:
		return b.object(sel, def, &jsonschema.Schema{Type: "string", Const: jsonschema.Ptr[any](def.Name)})
	case ast.Interface, ast.Union:
		return b.abstract(sel, def)
	}
	return &jsonschema.Schema{}
}

// abstract is the anyOf of the shapes of def's possible types, those alike
// but for __typename merged into one with an enum of their names.
func (b *outputBuilder) abstract(sel ast.SelectionSet, def *ast.Definition) *jsonschema.Schema {
	type group struct {
		key      string
		names    []any
		typename *jsonschema.Schema
		shape    *jsonschema.Schema
	}
	var groups []*group
	for _, t := range b.schema.GetPossibleTypes(def) {
		tn := &jsonschema.Schema{Type: "string"}
		shape := b.object(sel, t, tn)
		if b.nodes > maxOutputNodes {
			return &jsonschema.Schema{}
		}
		raw, _ := json.Marshal(shape) // the typename placeholder is alike in every shape
		i := slices.IndexFunc(groups, func(g *group) bool { return g.key == string(raw) })
		if i < 0 {
			groups = append(groups, &group{key: string(raw), typename: tn, shape: shape})
			i = len(groups) - 1
		}
		groups[i].names = append(groups[i].names, t.Name)
	}
	if len(groups) == 0 {
		return &jsonschema.Schema{Type: "object"}
	}
	shapes := make([]*jsonschema.Schema, len(groups))
	for i, g := range groups {
		if len(g.names) == 1 {
			g.typename.Const = &g.names[0]
		} else {
			g.typename.Enum = g.names
		}
		shapes[i] = g.shape
	}
	if len(shapes) == 1 {
		return shapes[0]
	}
	return &jsonschema.Schema{AnyOf: shapes}
}

// makeNullable lets s also be null.
func makeNullable(s *jsonschema.Schema) {
	switch {
	case s.Type != "":
		s.Types = []string{s.Type, "null"}
		s.Type = ""
		if s.Enum != nil {
			s.Enum = append(s.Enum, nil)
		}
	case s.AnyOf != nil:
		s.AnyOf = append(s.AnyOf, &jsonschema.Schema{Type: "null"})
	}
	// a custom scalar's {} already allows null
}

func customScalarOutputText(def *ast.Definition) string {
	text := "GraphQL scalar " + def.Name
	if def.Description != "" {
		text += ": " + def.Description
	}
	return text
}
