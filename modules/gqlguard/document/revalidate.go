package document

import (
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// Revalidate parses query and validates it against schema as the guard
// does with introspection off (gqlparser's rules without "Did you mean"
// suggestions, Int within 32 bits), and returns every error: what
// `civicgate schema check` reports of a recorded operation's normalized
// text against a candidate schema (docs/design.md D69). A text whose
// validation would be superlinear is refused like the guard refuses it.
func Revalidate(schema *ast.Schema, query string) []Error {
	parsed, err := parser.ParseQuery(&ast.Source{Input: query})
	if err != nil {
		return fromGQLErrors(asList(err), codeParseFailed)
	}
	if _, ok := validationWork(parsed, workBudget(len(query))); !ok {
		return []Error{{Message: msgTooComplexToValidate, Locations: []Location{{Line: 1, Column: 1}}, Code: codeTooComplexToValidate}}
	}
	return fromGQLErrors(validate(schema, parsed, validationRules(false)), codeValidationFailed)
}
