package analysis

import (
	"github.com/vektah/gqlparser/v2/ast"
)

// Walker measures operations of one parsed document. It does not rely on
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
type Walker struct {
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

// NewWalker returns a walker for the operations of doc. schema, when not
// nil, supplies the types' @cost; limitArg names the argument (or
// input-object member) sizing a list, defaultSize a list's size when
// nothing sizes it.
func NewWalker(doc *ast.QueryDocument, schema *ast.Schema, limitArg string, defaultSize int64) *Walker {
	w := &Walker{
		fragments:   make(map[string]*ast.FragmentDefinition, len(doc.Fragments)),
		schema:      schema,
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

// Measure returns the measures of op. Fragments measured for an earlier
// operation of the document are reused.
func (w *Walker) Measure(op *ast.OperationDefinition) Measures {
	root, depth, aliases, directives, dynamic := w.selectionSet(op.SelectionSet)
	m := Measures{
		Depth:      depth,
		Aliases:    aliases,
		Directives: SatAdd(directives, int64(len(op.Directives))),
	}
	for _, v := range op.VariableDefinitions {
		m.Directives = SatAdd(m.Directives, int64(len(v.Directives)))
	}
	m.Cost = Cost{plan: w.plan, root: root, dynamic: dynamic}
	if !dynamic {
		m.Cost.static = w.plan.cost(root, costVars{})
	}

	var ra rootAttr
	w.root(op.SelectionSet, &ra)
	m.RootFields = ra.fields
	m.Introspection = ra.intro
	m.RootNames = w.namesOf(ra.names)
	return m
}

// selectionSet builds the cost set of sel and returns its index with the
// set's depth (fields below, counting fragments through), aliases and
// directives (fragments expanded) and whether its cost depends on variables.
func (w *Walker) selectionSet(sel ast.SelectionSet) (idx int32, depth, aliases, directives int64, dynamic bool) {
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
				aliases = SatAdd(aliases, ca)
				directives = SatAdd(directives, cd)
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
				aliases = SatAdd(aliases, 1)
			}
			directives = SatAdd(directives, int64(len(s.Directives)))
			depth = max(depth, d+1)
			items = append(items, it)
		case *ast.InlineFragment:
			cidx, d, ca, cd, cdyn := w.selectionSet(s.SelectionSet)
			aliases = SatAdd(aliases, ca)
			directives = SatAdd(directives, SatAdd(cd, int64(len(s.Directives))))
			dynamic = dynamic || cdyn
			depth = max(depth, d)
			items = append(items, costItem{merge: true, set: cidx})
		case *ast.FragmentSpread:
			directives = SatAdd(directives, int64(len(s.Directives)))
			fm := w.fragment(s.Name)
			if fm == nil {
				continue
			}
			aliases = SatAdd(aliases, fm.aliases)
			directives = SatAdd(directives, fm.directives)
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
func (w *Walker) fragment(name string) *fragMeasure {
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
	fm.directives = SatAdd(fm.directives, int64(len(def.Directives)))
	w.plan.sets[fm.set].shared = true
	fm.state = 2
	return fm
}

// Steps is the number of selections visited so far: linear in the
// document (FuzzLimits holds it to twice the tokens).
func (w *Walker) Steps() int64 { return w.steps }

// frag returns the named fragment's measures, creating them unmeasured.
func (w *Walker) frag(name string) *fragMeasure {
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
func (w *Walker) limitOf(f *ast.Field) limitRef {
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
