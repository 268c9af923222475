package gqlguard

import (
	"github.com/vektah/gqlparser/v2/ast"
)

// walker measures operations of one parsed document. It does not rely on
// validation: unknown fields count as scalars, unknown fragments as empty,
// and fragment cycles are cut (and reported) rather than followed.
//
// Everything a fragment contributes is a property of the fragment alone: it
// is computed once, the first time any operation reaches the fragment, kept
// in its fragMeasure, and merged in full wherever the fragment is spread, in
// every operation of the document. Nothing about a fragment may be recorded
// as a side effect of measuring one operation only (the root field names of
// a fragment shared by two operations were once, and the second operation
// then touched no family). This file is the cost, depth, alias and
// directive walk; rootattr.go attributes root fields.
type walker struct {
	fragments   map[string]*ast.FragmentDefinition
	limitArg    string
	defaultSize int64
	// schema, when set, supplies the types' @cost (costdirectives.go).
	schema *ast.Schema

	plan  *costPlan
	frags map[string]*fragMeasure
	steps int64 // selections visited; linear in the document size
	// cycle reports a fragment cycle met (and cut) while measuring.
	cycle bool

	// Root field names met, interned (index = bit in a nameSet): the first
	// internScan in firstNames, found by a scan, the rest in moreNames with
	// rootIndex indexing them all (see intern).
	firstNames [internScan]string
	nNames     int
	moreNames  []string
	rootIndex  map[string]int
}

// fragMeasure is what one fragment contributes wherever it is spread.
type fragMeasure struct {
	state      uint8 // 0 unvisited, 1 in progress, 2 done
	depth      int64
	aliases    int64
	directives int64
	set        int32
	dynamic    bool

	rootState uint8 // as state, for root
	root      rootAttr
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
		m.cost.static = w.plan.cost(root, costVars{})
	}

	var ra rootAttr
	w.root(op.SelectionSet, &ra)
	m.rootFields = ra.fields
	m.introspection = ra.intro
	m.rootNames = w.namesOf(ra.names)
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
			it.weight, it.argWeight = w.fieldWeight(s, it.object)
			if ls, ok := listSizeOf(s.Definition); ok {
				it.limit = listSizeLimit(s, ls)
			}
			if it.limit.kind == limitNone {
				it.limit = w.limitOf(s)
			}
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
	fm := w.frag(name)
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

// frag returns the named fragment's measures, creating them unmeasured.
func (w *walker) frag(name string) *fragMeasure {
	fm := w.frags[name]
	if fm == nil {
		fm = &fragMeasure{}
		w.frags[name] = fm
	}
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
