package analysis

import (
	"math/bits"
	"sort"

	"github.com/vektah/gqlparser/v2/ast"
)

// Root attribution: which root fields an operation touches (entitlements,
// {graphql.families}, {graphql.root_fields}), how many (max_root_fields) and
// where its first introspection field is (introspection off).
//
// A fragment's root attribution is computed once, from the fragment alone,
// and merged whole into every selection that spreads it, whichever operation
// reached it first. Names are interned per document and a fragment keeps
// them as a bitset, so a merge costs one OR per 64 distinct root names and a
// document whose fragments double each other stays linear.
//
// Directives are not evaluated: a root field under @skip or @include (on the
// field, an inline fragment or a spread, literal or variable) is counted and
// attributed as if selected. The guard cannot know a variable's effect when
// it compiles a document, and counting the field is the safe side: a refusal
// of a field the request would have skipped is a false positive the client
// can fix, the opposite would let an unentitled field through.

// rootAttr is what a selection set contributes at the root of an operation,
// fragments and inline fragments expanded.
type rootAttr struct {
	fields int64         // root fields, __typename and introspection included (saturating)
	names  nameSet       // distinct root field names, introspection fields and __typename excluded
	intro  *ast.Position // the first __schema or __type field, in document order of the expansion
}

// merge adds b, met after everything already in a.
func (a *rootAttr) merge(b *rootAttr) {
	a.fields = SatAdd(a.fields, b.fields)
	a.names.union(b.names)
	if a.intro == nil {
		a.intro = b.intro
	}
}

// nameSet is a set of interned root field names: bit i is
// walker.rootName(i). The first 64 names (all of them in any ordinary
// document) live in lo, so a set allocates nothing.
type nameSet struct {
	lo   uint64
	more []uint64 // more[k] holds names 64(k+1) … 64(k+1)+63
}

func (s *nameSet) add(i int) {
	if i < 64 {
		s.lo |= 1 << i
		return
	}
	k := i/64 - 1
	for len(s.more) <= k {
		s.more = append(s.more, 0)
	}
	s.more[k] |= 1 << (i % 64)
}

func (s *nameSet) union(o nameSet) {
	s.lo |= o.lo
	for len(s.more) < len(o.more) {
		s.more = append(s.more, 0)
	}
	for k, v := range o.more {
		s.more[k] |= v
	}
}

// words calls f with each word of the set and the index of its first name.
func (s *nameSet) words(f func(base int, word uint64)) {
	f(0, s.lo)
	for k, v := range s.more {
		f(64*(k+1), v)
	}
}

// root adds the root attribution of sel to into.
func (w *Walker) root(sel ast.SelectionSet, into *rootAttr) {
	for _, s := range sel {
		w.steps++
		switch s := s.(type) {
		case *ast.Field:
			into.fields = SatAdd(into.fields, 1)
			switch s.Name {
			case "__schema", "__type":
				if into.intro == nil {
					into.intro = s.Position
				}
			case "__typename":
			default:
				into.names.add(w.intern(s.Name))
			}
		case *ast.InlineFragment:
			w.root(s.SelectionSet, into)
		case *ast.FragmentSpread:
			if fa := w.fragmentRoot(s.Name); fa != nil {
				into.merge(fa)
			}
		}
	}
}

// fragmentRoot attributes the named fragment once; nil for an unknown
// fragment or a spread that would close a cycle.
func (w *Walker) fragmentRoot(name string) *rootAttr {
	fm := w.frag(name)
	switch fm.rootState {
	case 1:
		w.cycle = true
		return nil
	case 2:
		return &fm.root
	}
	def := w.fragments[name]
	if def == nil {
		fm.rootState = 2
		return nil
	}
	fm.rootState = 1
	w.root(def.SelectionSet, &fm.root)
	fm.rootState = 2
	return &fm.root
}

// intern returns the index of a root field name. A document names a few
// root fields, kept in the walker and found by a scan; past internScan names
// a map takes over.
func (w *Walker) intern(name string) int {
	if w.rootIndex == nil {
		for i, n := range w.firstNames[:w.nNames] {
			if n == name {
				return i
			}
		}
		if w.nNames < internScan {
			w.firstNames[w.nNames] = name
			w.nNames++
			return w.nNames - 1
		}
		w.rootIndex = make(map[string]int, 2*internScan)
		for i, n := range w.firstNames {
			w.rootIndex[n] = i
		}
	}
	i, ok := w.rootIndex[name]
	if !ok {
		i = internScan + len(w.moreNames)
		w.rootIndex[name] = i
		w.moreNames = append(w.moreNames, name)
	}
	return i
}

const internScan = 16

func (w *Walker) rootName(i int) string {
	if i < internScan {
		return w.firstNames[i]
	}
	return w.moreNames[i-internScan]
}

// namesOf returns the names in s, sorted; nil for none.
func (w *Walker) namesOf(s nameSet) []string {
	n := bits.OnesCount64(s.lo)
	for _, v := range s.more {
		n += bits.OnesCount64(v)
	}
	if n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	s.words(func(base int, word uint64) {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			out = append(out, w.rootName(base+b))
			word &^= 1 << b
		}
	})
	sort.Strings(out)
	return out
}
