package document

import (
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/civicgate/civicgate/modules/gqlguard/analysis"
)

// gqlparser's validation is not linear in every document: its walker
// re-walks the fragments reachable from each operation and each fragment
// definition (quadratic in a chain of fragments), and the
// OverlappingFieldsCanBeMerged rule compares every pair of fields sharing a
// response key (quadratic in `{ a a a … }`). A 20 KB document within the
// token limit can cost seconds. validationWork estimates that work in one
// linear pass over the parsed document, stopping at budget, so such
// documents are refused before validation runs (code DOCUMENT_TOO_COMPLEX).

// workBudget is the validation work allowed for a document of n tokens.
func workBudget(tokens int) int64 {
	return 10_000 + 10*int64(tokens)
}

type workCounter struct {
	fragments map[string]*ast.FragmentDefinition
	seen      map[string]int // generation stamp per fragment name
	gen       int
	work      int64
	budget    int64
	keys      map[string]int64
}

// validationWork returns the estimated work and whether it stays within budget.
func validationWork(doc *ast.QueryDocument, budget int64) (int64, bool) {
	c := &workCounter{
		fragments: make(map[string]*ast.FragmentDefinition, len(doc.Fragments)),
		seen:      make(map[string]int),
		budget:    budget,
		keys:      make(map[string]int64),
	}
	for _, f := range doc.Fragments {
		if _, dup := c.fragments[f.Name]; !dup {
			c.fragments[f.Name] = f
		}
	}
	// The walker: each definition walks its fragment closure once.
	for _, op := range doc.Operations {
		c.gen++
		if !c.walk(op.SelectionSet) {
			return c.work, false
		}
	}
	for _, f := range doc.Fragments {
		c.gen++
		if !c.walk(f.SelectionSet) {
			return c.work, false
		}
	}
	// Field merging: Σ count² of the fields sharing a response key in each
	// selection set, fields of inline fragments and spread fragments included.
	for _, op := range doc.Operations {
		if !c.overlap(op.SelectionSet) {
			return c.work, false
		}
	}
	for _, f := range doc.Fragments {
		if !c.overlap(f.SelectionSet) {
			return c.work, false
		}
	}
	return c.work, true
}

func (c *workCounter) add(n int64) bool {
	c.work = analysis.SatAdd(c.work, n)
	return c.work <= c.budget
}

func (c *workCounter) walk(sel ast.SelectionSet) bool {
	for _, s := range sel {
		if !c.add(1) {
			return false
		}
		switch s := s.(type) {
		case *ast.Field:
			if !c.walk(s.SelectionSet) {
				return false
			}
		case *ast.InlineFragment:
			if !c.walk(s.SelectionSet) {
				return false
			}
		case *ast.FragmentSpread:
			def := c.fragments[s.Name]
			if def == nil || c.seen[s.Name] == c.gen {
				continue
			}
			c.seen[s.Name] = c.gen
			if !c.walk(def.SelectionSet) {
				return false
			}
		}
	}
	return true
}

// overlap adds the pair count of one selection set, then recurses into the
// fields' own selection sets.
func (c *workCounter) overlap(sel ast.SelectionSet) bool {
	clear(c.keys)
	c.gen++
	if !c.collect(sel) {
		return false
	}
	for _, n := range c.keys {
		if !c.add(analysis.SatMul(n, n)) {
			return false
		}
	}
	return c.overlapNested(sel)
}

// overlapNested checks the sub-selections of the fields of sel, through
// inline fragments (whose own fields were counted with the enclosing set).
func (c *workCounter) overlapNested(sel ast.SelectionSet) bool {
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			if len(s.SelectionSet) > 0 && !c.overlap(s.SelectionSet) {
				return false
			}
		case *ast.InlineFragment:
			if !c.overlapNested(s.SelectionSet) {
				return false
			}
		}
	}
	return true
}

// collect counts response keys of sel, through inline fragments and (once
// per set) spread fragments, as the rule gathers them.
func (c *workCounter) collect(sel ast.SelectionSet) bool {
	for _, s := range sel {
		if !c.add(1) {
			return false
		}
		switch s := s.(type) {
		case *ast.Field:
			key := s.Alias
			if key == "" {
				key = s.Name
			}
			c.keys[key]++
		case *ast.InlineFragment:
			if !c.collect(s.SelectionSet) {
				return false
			}
		case *ast.FragmentSpread:
			def := c.fragments[s.Name]
			if def == nil || c.seen[s.Name] == c.gen {
				continue
			}
			c.seen[s.Name] = c.gen
			if !c.collect(def.SelectionSet) {
				return false
			}
		}
	}
	return true
}
