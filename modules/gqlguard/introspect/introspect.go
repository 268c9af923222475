// Package introspect answers GraphQL introspection (__schema, __type,
// __typename) from a *ast.Schema without an upstream (docs/design.md D68):
// the guard answers a caller whose schema view is smaller than the whole
// schema from that view, so what it can learn by introspection is exactly
// what it can query. It imports no Caddy.
//
// The answer is the GraphQL introspection system of the October 2021
// specification with the later additions gqlparser's prelude declares:
// includeDeprecated on args and inputFields, isRepeatable, specifiedByURL
// and isOneOf. Response members follow the selection order; __Schema.types
// and __Schema.directives are sorted by name (a *ast.Schema holds its types
// in a map, so it has no order of its own; gqlgen sorts the same way).
package introspect

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
)

// ErrNotIntrospection: the operation selects a root field other than
// __schema, __type and __typename.
var ErrNotIntrospection = errors.New("introspect: the operation selects a field that is not introspection")

// Schema is one schema prepared for introspection: its types by name and
// in the order they are listed, its directives in order. Build it once per
// schema (view).
//
// A mutation or subscription root type without a field (as a view of no
// mutation holds it) is not answered: mutationType or subscriptionType is
// null and the type is neither listed nor found by __type. A schema with a
// field-less object type is invalid (graphql-js's buildClientSchema and
// validateSchema refuse it), and it holds nothing to select.
type Schema struct {
	s            *ast.Schema
	byName       map[string]*ast.Definition
	mutation     *ast.Definition
	subscription *ast.Definition
	types        []*ast.Definition
	directives   []*ast.DirectiveDefinition
	// deprecatedDefault is the reason of a bare @deprecated: the default of
	// the directive's reason argument ("No longer supported").
	deprecatedDefault *string
}

// New prepares s for introspection. s is not modified and must not be
// modified while the Schema is used.
func New(s *ast.Schema) *Schema {
	out := &Schema{s: s, byName: make(map[string]*ast.Definition, len(s.Types))}
	out.mutation, out.subscription = withFields(s.Mutation), withFields(s.Subscription)
	for name, def := range s.Types {
		if (def == s.Mutation && out.mutation == nil) || (def == s.Subscription && out.subscription == nil) {
			continue
		}
		out.byName[name] = def
		out.types = append(out.types, def)
	}
	slices.SortFunc(out.types, func(a, b *ast.Definition) int { return strings.Compare(a.Name, b.Name) })
	for _, d := range s.Directives {
		out.directives = append(out.directives, d)
	}
	slices.SortFunc(out.directives, func(a, b *ast.DirectiveDefinition) int { return strings.Compare(a.Name, b.Name) })
	if d := s.Directives["deprecated"]; d != nil {
		if a := d.Arguments.ForName("reason"); a != nil && a.DefaultValue != nil && a.DefaultValue.Kind == ast.StringValue {
			reason := a.DefaultValue.Raw
			out.deprecatedDefault = &reason
		}
	}
	return out
}

// Execute returns the "data" object of op, an operation of doc already
// validated against the schema, whose root selections are only __schema,
// __type and __typename; vars are the request's variables as decoded JSON
// (nil: none), their definitions' defaults applied here. An operation
// selecting anything else at its root is ErrNotIntrospection.
func (s *Schema) Execute(doc *ast.QueryDocument, op *ast.OperationDefinition, vars map[string]any) ([]byte, error) {
	root := s.rootType(op.Operation)
	if root == nil {
		return nil, fmt.Errorf("introspect: the schema has no %s type", op.Operation)
	}
	e := executor{schema: s, fragments: doc.Fragments, vars: withDefaults(op.VariableDefinitions, vars)}
	e.buf = make([]byte, 0, 4096)
	groups, err := e.collect(root.Name, []ast.SelectionSet{op.SelectionSet})
	if err != nil {
		return nil, err
	}
	e.buf = append(e.buf, '{')
	for i, g := range groups {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.key(g.key)
		f := g.fields[0]
		switch f.Name {
		case "__typename":
			e.str(root.Name)
		case "__schema":
			err = e.schemaObject(g.subSelections())
		case "__type":
			var name any
			if name, err = e.arg(f, "name"); err != nil {
				break
			}
			typeName, ok := name.(string)
			if !ok {
				return nil, errors.New("introspect: __type needs a name")
			}
			def := s.byName[typeName]
			if def == nil {
				e.null()
				break
			}
			err = e.typeObject(typeRef{def: def}, g.subSelections())
		default:
			return nil, ErrNotIntrospection
		}
		if err != nil {
			return nil, err
		}
	}
	e.buf = append(e.buf, '}')
	return e.buf, nil
}

func (s *Schema) rootType(op ast.Operation) *ast.Definition {
	switch op {
	case ast.Mutation:
		return s.s.Mutation
	case ast.Subscription:
		return s.s.Subscription
	}
	return s.s.Query
}

// withFields is def, or nil when def is nil or has no field but the
// introspection ones.
func withFields(def *ast.Definition) *ast.Definition {
	if def == nil {
		return nil
	}
	for _, f := range def.Fields {
		if !strings.HasPrefix(f.Name, "__") {
			return def
		}
	}
	return nil
}

// Visible is s as this package answers it: without a field-less mutation
// or subscription root type. Tests hand it to another engine to compare.
func (s *Schema) Visible() *ast.Schema {
	out := *s.s
	out.Types = s.byName
	out.Mutation, out.Subscription = s.mutation, s.subscription
	return &out
}

// withDefaults is vars with the defaults of the variables they lack.
func withDefaults(defs ast.VariableDefinitionList, vars map[string]any) map[string]any {
	var out map[string]any
	for _, d := range defs {
		if d.DefaultValue == nil {
			continue
		}
		if _, given := vars[d.Variable]; given {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(vars)+1)
			for k, v := range vars {
				out[k] = v
			}
		}
		if v, err := d.DefaultValue.Value(nil); err == nil {
			out[d.Variable] = v
		}
	}
	if out == nil {
		return vars
	}
	return out
}

// RootSelections tells which root fields op selects, through fragments and
// whatever their directives: the position of the first __schema or __type
// (nil: none) and whether any root field other than __schema, __type and
// __typename is selected. It needs no schema, so it also reads a document
// that failed validation.
func RootSelections(doc *ast.QueryDocument, op *ast.OperationDefinition) (introspection *ast.Position, other bool) {
	seen := map[string]bool{}
	var walk func(set ast.SelectionSet)
	walk = func(set ast.SelectionSet) {
		for _, sel := range set {
			switch sel := sel.(type) {
			case *ast.Field:
				switch sel.Name {
				case "__schema", "__type":
					if introspection == nil {
						introspection = sel.Position
					}
				case "__typename":
				default:
					other = true
				}
			case *ast.InlineFragment:
				walk(sel.SelectionSet)
			case *ast.FragmentSpread:
				if seen[sel.Name] {
					continue
				}
				seen[sel.Name] = true
				if f := doc.Fragments.ForName(sel.Name); f != nil {
					walk(f.SelectionSet)
				}
			}
		}
	}
	walk(op.SelectionSet)
	return introspection, other
}
