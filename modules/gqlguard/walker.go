package gqlguard

import (
	"sort"

	"github.com/vektah/gqlparser/v2/ast"
)

// walker measures operations of one parsed document. It does not rely on
// validation: unknown fields count as scalars, unknown fragments as empty,
// and fragment cycles are cut (and reported) rather than followed.
type walker struct {
	fragments   map[string]*ast.FragmentDefinition
	limitArg    string
	defaultSize int64

	plan  *costPlan
	frags map[string]*fragMeasure
	steps int64 // selections visited; linear in the document size
	// cycle reports a fragment cycle met (and cut) while measuring.
	cycle bool
}

type fragMeasure struct {
	state      uint8 // 0 unvisited, 1 in progress, 2 done
	depth      int64
	aliases    int64
	directives int64
	set        int32
	dynamic    bool

	rootState  uint8
	rootFields int64
}

func newWalker(doc *ast.QueryDocument, limitArg string, defaultSize int64) *walker {
	w := &walker{
		fragments:   make(map[string]*ast.FragmentDefinition, len(doc.Fragments)),
		limitArg:    limitArg,
		defaultSize: defaultSize,
		plan:        &costPlan{defaultSize: defaultSize},
		frags:       make(map[string]*fragMeasure),
	}
	for _, f := range doc.Fragments {
		if _, dup := w.fragments[f.Name]; !dup {
			w.fragments[f.Name] = f
		}
	}
	return w
}

// measure returns the measures of op. Fragments measured for an earlier
// operation of the document are reused.
func (w *walker) measure(op *ast.OperationDefinition) opMeasures {
	root, depth, aliases, directives, dynamic := w.selectionSet(op.SelectionSet)
	m := opMeasures{
		depth:      depth,
		aliases:    aliases,
		directives: satAdd(directives, int64(len(op.Directives))),
	}
	for _, v := range op.VariableDefinitions {
		m.directives = satAdd(m.directives, int64(len(v.Directives)))
	}
	m.cost = opCost{plan: w.plan, root: root, dynamic: dynamic}
	if !dynamic {
		m.cost.static = w.plan.cost(root, nil)
	}

	names := map[string]struct{}{}
	m.rootFields = w.root(op.SelectionSet, names, &m.introspection)
	for n := range names {
		m.rootNames = append(m.rootNames, n)
	}
	sort.Strings(m.rootNames)
	return m
}

// selectionSet builds the cost set of sel and returns its index with the
// set's depth (fields below, counting fragments through), aliases and
// directives (fragments expanded) and whether its cost depends on variables.
func (w *walker) selectionSet(sel ast.SelectionSet) (idx int32, depth, aliases, directives int64, dynamic bool) {
	idx = int32(len(w.plan.sets))
	w.plan.sets = append(w.plan.sets, costSet{})
	items := make([]costItem, 0, len(sel))
	for _, s := range sel {
		w.steps++
		switch s := s.(type) {
		case *ast.Field:
			it := costItem{set: -1}
			var d int64
			if len(s.SelectionSet) > 0 {
				var ca, cd int64
				var cdyn bool
				it.set, d, ca, cd, cdyn = w.selectionSet(s.SelectionSet)
				aliases = satAdd(aliases, ca)
				directives = satAdd(directives, cd)
				dynamic = dynamic || cdyn
				it.object = true
			}
			if def := s.Definition; def != nil && def.Type != nil {
				it.list = def.Type.Elem != nil
			}
			it.limit = w.limitOf(s)
			if it.limit.kind == limitVar || it.limit.kind == limitVarMember {
				dynamic = true
			}
			if s.Alias != "" && s.Alias != s.Name {
				aliases = satAdd(aliases, 1)
			}
			directives = satAdd(directives, int64(len(s.Directives)))
			depth = max(depth, d+1)
			items = append(items, it)
		case *ast.InlineFragment:
			cidx, d, ca, cd, cdyn := w.selectionSet(s.SelectionSet)
			aliases = satAdd(aliases, ca)
			directives = satAdd(directives, satAdd(cd, int64(len(s.Directives))))
			dynamic = dynamic || cdyn
			depth = max(depth, d)
			items = append(items, costItem{merge: true, set: cidx})
		case *ast.FragmentSpread:
			directives = satAdd(directives, int64(len(s.Directives)))
			fm := w.fragment(s.Name)
			if fm == nil {
				continue
			}
			aliases = satAdd(aliases, fm.aliases)
			directives = satAdd(directives, fm.directives)
			dynamic = dynamic || fm.dynamic
			depth = max(depth, fm.depth)
			items = append(items, costItem{merge: true, set: fm.set})
		}
	}
	w.plan.sets[idx].items = items
	return idx, depth, aliases, directives, dynamic
}

// fragment measures the named fragment once; nil for an unknown fragment or
// a spread that would close a cycle.
func (w *walker) fragment(name string) *fragMeasure {
	fm := w.frags[name]
	if fm == nil {
		fm = &fragMeasure{}
		w.frags[name] = fm
	}
	switch fm.state {
	case 1:
		w.cycle = true
		return nil
	case 2:
		return fm
	}
	def := w.fragments[name]
	if def == nil {
		fm.state = 2
		fm.set = -1
		return fm
	}
	fm.state = 1
	fm.set, fm.depth, fm.aliases, fm.directives, fm.dynamic = w.selectionSet(def.SelectionSet)
	fm.directives = satAdd(fm.directives, int64(len(def.Directives)))
	w.plan.sets[fm.set].shared = true
	fm.state = 2
	return fm
}

// limitOf finds the field's limit argument: `limit: 10`, `limit: $n`,
// `input: {limit: 10}`, `input: {limit: $n}` or `input: $in` (the member of
// the coerced input object).
func (w *walker) limitOf(f *ast.Field) limitRef {
	for _, a := range f.Arguments {
		if a.Value == nil {
			continue
		}
		if a.Name == w.limitArg {
			if r := limitValue(a.Value); r.kind != limitNone {
				return r
			}
		}
	}
	for _, a := range f.Arguments {
		if a.Value == nil {
			continue
		}
		switch a.Value.Kind {
		case ast.ObjectValue:
			for _, c := range a.Value.Children {
				if c.Name == w.limitArg && c.Value != nil {
					if r := limitValue(c.Value); r.kind != limitNone {
						return r
					}
				}
			}
		case ast.Variable:
			if a.Name != w.limitArg && a.Value.Definition != nil && a.Value.Definition.Kind == ast.InputObject {
				return limitRef{kind: limitVarMember, varName: a.Value.Raw, member: w.limitArg}
			}
		}
	}
	return limitRef{}
}

func limitValue(v *ast.Value) limitRef {
	switch v.Kind {
	case ast.IntValue:
		return limitRef{kind: limitConst, value: parseLimitLiteral(v.Raw)}
	case ast.Variable:
		return limitRef{kind: limitVar, varName: v.Raw}
	}
	return limitRef{}
}

// root counts the root fields of sel with fragments expanded, collects their
// names (introspection fields excluded) and the first introspection field.
func (w *walker) root(sel ast.SelectionSet, names map[string]struct{}, intro **ast.Position) int64 {
	var n int64
	for _, s := range sel {
		w.steps++
		switch s := s.(type) {
		case *ast.Field:
			n = satAdd(n, 1)
			switch s.Name {
			case "__schema", "__type":
				if *intro == nil {
					*intro = s.Position
				}
			case "__typename":
			default:
				names[s.Name] = struct{}{}
			}
		case *ast.InlineFragment:
			n = satAdd(n, w.root(s.SelectionSet, names, intro))
		case *ast.FragmentSpread:
			fm := w.frags[s.Name]
			def := w.fragments[s.Name]
			if fm == nil || def == nil {
				continue
			}
			switch fm.rootState {
			case 0:
				fm.rootState = 1
				fm.rootFields = w.root(def.SelectionSet, names, intro)
				fm.rootState = 2
			case 1:
				w.cycle = true
				continue
			}
			n = satAdd(n, fm.rootFields)
		}
	}
	return n
}
