package introspect

import "github.com/vektah/gqlparser/v2/ast"

// listFields are the fields of the introspection types that answer a list.
// Below __schema and __type every selected field is one of the
// introspection types', so a field of one of these names is a list.
var listFields = map[string]bool{
	"types": true, "directives": true, "fields": true, "args": true, "inputFields": true,
	"interfaces": true, "possibleTypes": true, "enumValues": true,
}

// ListNesting is the deepest chain of nested list fields the operation op of
// doc selects, fragments followed: graphql-js's IntrospectionQuery selects
// types → fields → args, 3. An answer's size grows with the schema's size
// to this power, so it bounds the work an introspection costs where depth
// does not (ofType chains are deep but one object wide). A spread of a
// fragment doc does not hold counts nothing (validation refused it).
func ListNesting(doc *ast.QueryDocument, op *ast.OperationDefinition) int {
	return nesting(doc, op.SelectionSet, map[string]bool{})
}

func nesting(doc *ast.QueryDocument, set ast.SelectionSet, open map[string]bool) int {
	deepest := 0
	for _, sel := range set {
		n := 0
		switch s := sel.(type) {
		case *ast.Field:
			n = nesting(doc, s.SelectionSet, open)
			if listFields[s.Name] {
				n++
			}
		case *ast.InlineFragment:
			n = nesting(doc, s.SelectionSet, open)
		case *ast.FragmentSpread:
			frag := doc.Fragments.ForName(s.Name)
			if frag == nil || open[s.Name] { // a cycle: validation refuses it; never loop
				continue
			}
			open[s.Name] = true
			n = nesting(doc, frag.SelectionSet, open)
			delete(open, s.Name)
		}
		deepest = max(deepest, n)
	}
	return deepest
}
