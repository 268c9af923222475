package analysis

import (
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/formatter"
)

// normalizedText formats op and the fragments it reaches (in document
// order) compacted, as the document hash does, on copies whose literal
// values are normalized: the parsed document the compiled operation keeps
// is never modified.
func normalizedText(doc *ast.QueryDocument, op *ast.OperationDefinition, reached map[string]bool) string {
	out := &ast.QueryDocument{Operations: ast.OperationList{normalizeOperation(op)}}
	seen := map[string]bool{}
	for _, f := range doc.Fragments {
		if !reached[f.Name] || seen[f.Name] {
			continue
		}
		seen[f.Name] = true
		c := *f
		c.Comment, c.Description = nil, "" // a description is the caller's text
		c.Directives = normalizeDirectives(f.Directives)
		c.SelectionSet = normalizeSelections(f.SelectionSet)
		out.Fragments = append(out.Fragments, &c)
	}
	var b strings.Builder
	formatter.NewFormatter(&b, formatter.WithCompacted()).FormatQueryDocument(out)
	return b.String()
}

func normalizeOperation(op *ast.OperationDefinition) *ast.OperationDefinition {
	c := *op
	c.Comment, c.Description = nil, "" // a description is the caller's text
	c.Directives = normalizeDirectives(op.Directives)
	c.SelectionSet = normalizeSelections(op.SelectionSet)
	c.VariableDefinitions = make(ast.VariableDefinitionList, 0, len(op.VariableDefinitions))
	for _, v := range op.VariableDefinitions {
		vc := *v
		vc.Comment, vc.Description = nil, ""
		vc.DefaultValue = normalizeValue(v.DefaultValue)
		vc.Directives = normalizeDirectives(v.Directives)
		c.VariableDefinitions = append(c.VariableDefinitions, &vc)
	}
	return &c
}

func normalizeSelections(set ast.SelectionSet) ast.SelectionSet {
	if set == nil {
		return nil
	}
	out := make(ast.SelectionSet, 0, len(set))
	for _, sel := range set {
		switch sel := sel.(type) {
		case *ast.Field:
			c := *sel
			c.Comment = nil
			c.Arguments = normalizeArguments(sel.Arguments)
			c.Directives = normalizeDirectives(sel.Directives)
			c.SelectionSet = normalizeSelections(sel.SelectionSet)
			out = append(out, &c)
		case *ast.InlineFragment:
			c := *sel
			c.Comment = nil
			c.Directives = normalizeDirectives(sel.Directives)
			c.SelectionSet = normalizeSelections(sel.SelectionSet)
			out = append(out, &c)
		case *ast.FragmentSpread:
			c := *sel
			c.Comment = nil
			c.Directives = normalizeDirectives(sel.Directives)
			out = append(out, &c)
		}
	}
	return out
}

func normalizeArguments(args ast.ArgumentList) ast.ArgumentList {
	if args == nil {
		return nil
	}
	out := make(ast.ArgumentList, 0, len(args))
	for _, a := range args {
		c := *a
		c.Comment = nil
		c.Value = normalizeValue(a.Value)
		out = append(out, &c)
	}
	return out
}

func normalizeDirectives(dirs ast.DirectiveList) ast.DirectiveList {
	if dirs == nil {
		return nil
	}
	out := make(ast.DirectiveList, 0, len(dirs))
	for _, d := range dirs {
		c := *d
		c.Arguments = normalizeArguments(d.Arguments)
		out = append(out, &c)
	}
	return out
}

// normalizeValue replaces what in a literal could be the caller's data by
// a constant of its kind: strings and block strings by "", ints by 0,
// floats by 0.0. Booleans, null, enum values and variables are kept (they
// are the schema's or the document's, not data); an input object keeps its
// field names with their values normalized; a list keeps one of each
// distinct normalized element, so `[1, 2, 3]` is `[0]` and
// `[A, B, A]` is `[A,B]`: the element types are still checked, the
// element count (data) is gone (docs/design.md D69).
func normalizeValue(v *ast.Value) *ast.Value {
	if v == nil {
		return nil
	}
	c := &ast.Value{Kind: v.Kind, Raw: v.Raw, Definition: v.Definition, ExpectedType: v.ExpectedType}
	switch v.Kind {
	case ast.StringValue, ast.BlockValue:
		c.Kind, c.Raw = ast.StringValue, ""
	case ast.IntValue:
		c.Raw = "0"
	case ast.FloatValue:
		c.Raw = "0.0"
	case ast.ListValue:
		seen := map[string]bool{}
		for _, e := range v.Children {
			n := normalizeValue(e.Value)
			if key := n.String(); !seen[key] {
				seen[key] = true
				c.Children = append(c.Children, &ast.ChildValue{Value: n})
			}
		}
	case ast.ObjectValue:
		for _, e := range v.Children {
			c.Children = append(c.Children, &ast.ChildValue{Name: e.Name, Value: normalizeValue(e.Value)})
		}
	}
	return c
}
