package readplan

import (
	"github.com/vektah/gqlparser/v2/ast"
)

// collected is one response key of a selection set: the first field that named it and the selections of
// every field merged under it. It mirrors gqlgen's graphql.CollectedField.
type collected struct {
	field      *ast.Field
	selections ast.SelectionSet
}

// collector is gqlgen's graphql.CollectFields (executable_schema.go) for schemas without interfaces or
// unions: the same grouping by response key in first-seen order, the same merging of sub-selections, the same
// @skip/@include evaluation and the same "a fragment spread once per selection set" rule. A directive it
// does not know (@defer) or an `if` that is not a boolean makes ok false: the document is not compiled.
type collector struct {
	doc  *ast.QueryDocument
	vars map[string]any
	ok   bool
}

// collect groups selSet, whose fields belong to the object type typeName.
func (c *collector) collect(selSet ast.SelectionSet, typeName string) []collected {
	return c.collectInto(nil, selSet, typeName, map[string]bool{})
}

func (c *collector) collectInto(out []collected, selSet ast.SelectionSet, typeName string, visited map[string]bool) []collected {
	for _, sel := range selSet {
		switch sel := sel.(type) {
		case *ast.Field:
			if !c.include(sel.Directives) {
				continue
			}
			out = merge(out, collected{field: sel, selections: sel.SelectionSet})
		case *ast.InlineFragment:
			if !c.include(sel.Directives) || !conditionMatches(sel.TypeCondition, typeName) {
				continue
			}
			for _, child := range c.collectInto(nil, sel.SelectionSet, typeName, visited) {
				out = merge(out, child)
			}
		case *ast.FragmentSpread:
			if visited[sel.Name] {
				continue
			}
			if !c.include(sel.Directives) {
				continue
			}
			visited[sel.Name] = true
			frag := c.doc.Fragments.ForName(sel.Name)
			if frag == nil {
				c.ok = false
				continue
			}
			if !conditionMatches(frag.TypeCondition, typeName) {
				continue
			}
			for _, child := range c.collectInto(nil, frag.SelectionSet, typeName, visited) {
				out = merge(out, child)
			}
		default:
			c.ok = false
		}
	}
	return out
}

// merge adds f under its response key: a key already present takes f's selections after its own.
func merge(out []collected, f collected) []collected {
	for i := range out {
		if out[i].field.Name == f.field.Name && out[i].field.Alias == f.field.Alias {
			out[i].selections = append(out[i].selections[:len(out[i].selections):len(out[i].selections)], f.selections...)
			return out
		}
	}
	return append(out, f)
}

func conditionMatches(typeCondition, typeName string) bool {
	return typeCondition == "" || typeCondition == typeName
}

// include evaluates @skip and @include as gqlgen's shouldIncludeNode does.
func (c *collector) include(directives ast.DirectiveList) bool {
	skip, include := false, true
	for _, d := range directives {
		switch d.Name {
		case "skip":
			skip = c.ifArgument(d)
		case "include":
			include = c.ifArgument(d)
		default:
			c.ok = false
		}
	}
	return !skip && include
}

func (c *collector) ifArgument(d *ast.Directive) bool {
	arg := d.Arguments.ForName("if")
	if arg == nil {
		c.ok = false
		return false
	}
	v, err := arg.Value.Value(c.vars)
	b, isBool := v.(bool)
	if err != nil || !isBool {
		c.ok = false
	}
	return b
}

// directiveVariables lists the variables that @skip and @include read anywhere in doc: the plan compiled for
// a request depends on their values only.
func directiveVariables(doc *ast.QueryDocument, op *ast.OperationDefinition) []string {
	var names []string
	var walk func(ast.SelectionSet)
	addFrom := func(ds ast.DirectiveList) {
		for _, d := range ds {
			if arg := d.Arguments.ForName("if"); arg != nil && arg.Value != nil && arg.Value.Kind == ast.Variable {
				names = appendUnique(names, arg.Value.Raw)
			}
		}
	}
	walk = func(ss ast.SelectionSet) {
		for _, sel := range ss {
			switch sel := sel.(type) {
			case *ast.Field:
				addFrom(sel.Directives)
				walk(sel.SelectionSet)
			case *ast.InlineFragment:
				addFrom(sel.Directives)
				walk(sel.SelectionSet)
			case *ast.FragmentSpread:
				addFrom(sel.Directives)
			}
		}
	}
	walk(op.SelectionSet)
	for _, f := range doc.Fragments {
		walk(f.SelectionSet)
	}
	return names
}

func appendUnique(names []string, n string) []string {
	for _, x := range names {
		if x == n {
			return names
		}
	}
	return append(names, n)
}
