// Package view cuts a GraphQL schema down to what a set of root fields
// reaches (docs/design.md D67): the schema a caller of a tier sees, so a
// field of a family it does not own is unknown exactly as a field that does
// not exist.
package view

import (
	"slices"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
)

// Build returns the part of s that the named root fields reach: roots maps
// an operation's root type name (s.Query.Name …) to the root fields kept.
// Root types keep only those fields (and the introspection fields gqlparser
// adds to Query); every type reachable from the kept fields is kept whole:
// fields' and arguments' types, input objects' fields, the interfaces an
// object implements, the members of a union and the implementations of an
// interface. Built-in scalars, the introspection types and the directives
// (with their arguments' types) are always kept. s is not modified; kept
// definitions other than root types are shared with it.
func Build(s *ast.Schema, roots map[string][]string) *ast.Schema {
	r := reach{s: s, kept: map[string]*ast.Definition{}}
	rootTypes := map[string]*ast.Definition{}
	for _, def := range []*ast.Definition{s.Query, s.Mutation, s.Subscription} {
		if def == nil {
			continue
		}
		cut := *def
		cut.Fields = nil
		for _, f := range def.Fields {
			if strings.HasPrefix(f.Name, "__") || slices.Contains(roots[def.Name], f.Name) {
				cut.Fields = append(cut.Fields, f)
			}
		}
		rootTypes[def.Name] = &cut
		r.kept[def.Name] = &cut
	}
	for _, def := range rootTypes {
		r.fields(def)
	}
	for name, def := range s.Types {
		if def.BuiltIn && (def.Kind == ast.Scalar || strings.HasPrefix(name, "__")) {
			r.add(name)
		}
	}
	for _, d := range s.Directives {
		for _, a := range d.Arguments {
			r.add(a.Type.Name())
		}
	}
	return r.schema(rootTypes)
}

// reach is the walk over the types the kept root fields reach.
type reach struct {
	s    *ast.Schema
	kept map[string]*ast.Definition
}

// add keeps the type named name and everything it reaches.
func (r *reach) add(name string) {
	if _, done := r.kept[name]; done {
		return
	}
	def := r.s.Types[name]
	if def == nil {
		return
	}
	r.kept[name] = def
	r.fields(def)
	for _, i := range def.Interfaces {
		r.add(i)
	}
	for _, m := range def.Types { // union members
		r.add(m)
	}
	if def.Kind == ast.Interface {
		for _, impl := range r.s.PossibleTypes[name] {
			r.add(impl.Name)
		}
	}
}

// fields keeps the types of def's fields and of their arguments.
func (r *reach) fields(def *ast.Definition) {
	for _, f := range def.Fields {
		r.add(f.Type.Name())
		for _, a := range f.Arguments {
			r.add(a.Type.Name())
		}
	}
}

// schema assembles the view from the kept types, with the possible-types
// and implements indexes cut to them.
func (r *reach) schema(rootTypes map[string]*ast.Definition) *ast.Schema {
	s := r.s
	out := &ast.Schema{
		Types:         r.kept,
		Directives:    s.Directives,
		PossibleTypes: map[string][]*ast.Definition{},
		Implements:    map[string][]*ast.Definition{},
		Description:   s.Description,
		Comment:       s.Comment,
	}
	pick := func(def *ast.Definition) *ast.Definition {
		if def == nil {
			return nil
		}
		return rootTypes[def.Name]
	}
	out.Query, out.Mutation, out.Subscription = pick(s.Query), pick(s.Mutation), pick(s.Subscription)
	for name, defs := range s.PossibleTypes {
		if r.kept[name] != nil {
			out.PossibleTypes[name] = r.keptOf(defs)
		}
	}
	for name, defs := range s.Implements {
		if r.kept[name] != nil {
			out.Implements[name] = r.keptOf(defs)
		}
	}
	return out
}

// keptOf is defs cut to the kept types, each as kept (a root type's cut
// definition rather than the schema's).
func (r *reach) keptOf(defs []*ast.Definition) []*ast.Definition {
	var out []*ast.Definition
	for _, d := range defs {
		if k := r.kept[d.Name]; k != nil {
			out = append(out, k)
		}
	}
	return out
}
