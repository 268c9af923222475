// Package reference measures GraphQL operations the obvious way, for the
// tests of graphql_guard's analysis step to compare the memoising walker
// with: every fragment spread is expanded again where it occurs, a fragment
// already on the current path is skipped. It is exponential on purpose and
// is used by tests only.
package reference

import (
	"math"
	"strconv"

	"github.com/vektah/gqlparser/v2/ast"
)

// Measures are an operation's measures computed the obvious way: every
// fragment spread is expanded again where it occurs (no memo), a fragment
// already on the current path is skipped.
type Measures struct {
	Names      map[string]bool
	RootFields int64
	Intro      *ast.Position
	Depth      int64
	Aliases    int64
	Directives int64
	Cost       int64
}

type Expander struct {
	frags       map[string]*ast.FragmentDefinition
	defaultSize int64
}

// New returns the reference expander of doc; defaultSize is a list's size
// when no literal limit sizes it.
func New(doc *ast.QueryDocument, defaultSize int64) *Expander {
	r := &Expander{frags: map[string]*ast.FragmentDefinition{}, defaultSize: defaultSize}
	for _, f := range doc.Fragments {
		r.frags[f.Name] = f
	}
	return r
}

// Measure returns op's measures, every spread expanded again.
func (r *Expander) Measure(op *ast.OperationDefinition) Measures {
	m := Measures{Names: map[string]bool{}}
	r.root(op.SelectionSet, &m, map[string]bool{})
	m.Depth = r.depthOf(op.SelectionSet, map[string]bool{})
	m.Aliases = r.aliasesOf(op.SelectionSet, map[string]bool{})
	m.Directives = int64(len(op.Directives)) + r.directivesOf(op.SelectionSet, map[string]bool{})
	for _, v := range op.VariableDefinitions {
		m.Directives += int64(len(v.Directives))
	}
	m.Cost = r.costOf(op.SelectionSet, r.defaultSize, map[string]bool{})
	return m
}

// expand calls f with the selection set of the fragment a spread names,
// unless it is unknown or already on the path.
func (r *Expander) expand(s *ast.FragmentSpread, path map[string]bool, f func(ast.SelectionSet)) {
	def := r.frags[s.Name]
	if def == nil || path[s.Name] {
		return
	}
	path[s.Name] = true
	f(def.SelectionSet)
	delete(path, s.Name)
}

func (r *Expander) root(sel ast.SelectionSet, m *Measures, path map[string]bool) {
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			m.RootFields++
			switch s.Name {
			case "__schema", "__type":
				if m.Intro == nil {
					m.Intro = s.Position
				}
			case "__typename":
			default:
				m.Names[s.Name] = true
			}
		case *ast.InlineFragment:
			r.root(s.SelectionSet, m, path)
		case *ast.FragmentSpread:
			r.expand(s, path, func(fs ast.SelectionSet) { r.root(fs, m, path) })
		}
	}
}

func (r *Expander) depthOf(sel ast.SelectionSet, path map[string]bool) int64 {
	var d int64
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			d = max(d, 1+r.depthOf(s.SelectionSet, path))
		case *ast.InlineFragment:
			d = max(d, r.depthOf(s.SelectionSet, path))
		case *ast.FragmentSpread:
			r.expand(s, path, func(fs ast.SelectionSet) { d = max(d, r.depthOf(fs, path)) })
		}
	}
	return d
}

func (r *Expander) aliasesOf(sel ast.SelectionSet, path map[string]bool) int64 {
	var n int64
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			if s.Alias != "" && s.Alias != s.Name {
				n++
			}
			n += r.aliasesOf(s.SelectionSet, path)
		case *ast.InlineFragment:
			n += r.aliasesOf(s.SelectionSet, path)
		case *ast.FragmentSpread:
			r.expand(s, path, func(fs ast.SelectionSet) { n += r.aliasesOf(fs, path) })
		}
	}
	return n
}

func (r *Expander) directivesOf(sel ast.SelectionSet, path map[string]bool) int64 {
	var n int64
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			n += int64(len(s.Directives)) + r.directivesOf(s.SelectionSet, path)
		case *ast.InlineFragment:
			n += int64(len(s.Directives)) + r.directivesOf(s.SelectionSet, path)
		case *ast.FragmentSpread:
			n += int64(len(s.Directives))
			r.expand(s, path, func(fs ast.SelectionSet) {
				n += int64(len(r.frags[s.Name].Directives)) + r.directivesOf(fs, path)
			})
		}
	}
	return n
}

// costOf is the cost of sel when the enclosing field hands down size: a list
// with its own literal limit costs limit × (object + selection), a list
// without one costs size × (…), a non-list field with a limit hands it to
// its selection.
func (r *Expander) costOf(sel ast.SelectionSet, size int64, path map[string]bool) int64 {
	var c int64
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			var obj int64
			if len(s.SelectionSet) > 0 {
				obj = 1
			}
			list := s.Definition != nil && s.Definition.Type.Elem != nil
			limit, own := literalLimit(s)
			switch {
			case list && own:
				c += limit * (obj + r.costOf(s.SelectionSet, r.defaultSize, path))
			case list:
				c += size * (obj + r.costOf(s.SelectionSet, r.defaultSize, path))
			case own:
				c += obj + r.costOf(s.SelectionSet, limit, path)
			default:
				c += obj + r.costOf(s.SelectionSet, r.defaultSize, path)
			}
		case *ast.InlineFragment:
			c += r.costOf(s.SelectionSet, size, path)
		case *ast.FragmentSpread:
			r.expand(s, path, func(fs ast.SelectionSet) { c += r.costOf(fs, size, path) })
		}
	}
	return c
}

// literalLimit finds `limit: N` or `input: {limit: N}` (the only shapes the
// generated documents use).
func literalLimit(f *ast.Field) (int64, bool) {
	for _, a := range f.Arguments {
		if a.Name == "limit" && a.Value.Kind == ast.IntValue {
			return limitLiteral(a.Value.Raw), true
		}
		if a.Value.Kind == ast.ObjectValue {
			for _, ch := range a.Value.Children {
				if ch.Name == "limit" && ch.Value.Kind == ast.IntValue {
					return limitLiteral(ch.Value.Raw), true
				}
			}
		}
	}
	return 0, false
}

// limitLiteral reads an Int literal as the walker does: out of range is
// huge, negative is 0.
func limitLiteral(raw string) int64 {
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n > saturated {
		return saturated
	}
	return max(n, 0)
}

// saturated is analysis.Saturated, restated: the reference shares no code
// with what it checks.
const saturated = math.MaxInt64 / 4
