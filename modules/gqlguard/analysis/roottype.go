package analysis

import "github.com/vektah/gqlparser/v2/ast"

// RootType returns the schema's root type of kind (the type an operation of
// that kind selects from), or nil when the schema has none.
func RootType(s *ast.Schema, kind ast.Operation) *ast.Definition {
	switch kind {
	case ast.Query:
		return s.Query
	case ast.Mutation:
		return s.Mutation
	case ast.Subscription:
		return s.Subscription
	}
	return nil
}
