package tooldef

import (
	"github.com/vektah/gqlparser/v2/ast"
)

// boundDescriptions finds, for each variable of a validated operation, the
// schema's description of the first argument or input field it is passed
// to: `bills(input: {q: $text})` describes $text with BillsInput.q's
// description. Fragments are followed once each.
func boundDescriptions(op *ast.OperationDefinition) map[string]string {
	w := boundWalker{out: map[string]string{}, seen: map[string]bool{}}
	w.directives(op.Directives)
	w.selections(op.SelectionSet)
	return w.out
}

type boundWalker struct {
	out  map[string]string
	seen map[string]bool // fragments walked
}

func (w *boundWalker) selections(sel ast.SelectionSet) {
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			if s.Definition != nil {
				for _, a := range s.Arguments {
					if ad := s.Definition.Arguments.ForName(a.Name); ad != nil {
						w.value(a.Value, ad.Description)
					}
				}
			}
			w.directives(s.Directives)
			w.selections(s.SelectionSet)
		case *ast.InlineFragment:
			w.directives(s.Directives)
			w.selections(s.SelectionSet)
		case *ast.FragmentSpread:
			w.directives(s.Directives)
			if s.Definition != nil && !w.seen[s.Name] {
				w.seen[s.Name] = true
				w.selections(s.Definition.SelectionSet)
			}
		}
	}
}

func (w *boundWalker) directives(list ast.DirectiveList) {
	for _, d := range list {
		if d.Definition == nil {
			continue
		}
		for _, a := range d.Arguments {
			if ad := d.Definition.Arguments.ForName(a.Name); ad != nil {
				w.value(a.Value, ad.Description)
			}
		}
	}
}

// value records desc for a variable v is, or recurses into a list or an
// input object literal (validation set each value's Definition).
func (w *boundWalker) value(v *ast.Value, desc string) {
	if v == nil {
		return
	}
	switch v.Kind {
	case ast.Variable:
		if _, done := w.out[v.Raw]; !done && desc != "" {
			w.out[v.Raw] = desc
		}
	case ast.ListValue:
		for _, c := range v.Children {
			w.value(c.Value, desc)
		}
	case ast.ObjectValue:
		for _, c := range v.Children {
			var fd *ast.FieldDefinition
			if v.Definition != nil {
				fd = v.Definition.Fields.ForName(c.Name)
			}
			if fd != nil {
				w.value(c.Value, fd.Description)
			}
		}
	}
}
