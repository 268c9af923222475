package gqlguard

import (
	"fmt"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
)

// Which operation types and HTTP methods pass (docs/design.md D22): the
// `operations` and `methods` options.

// parseOperations reads the `operations` option's words.
func parseOperations(words []string) ([]string, error) {
	seen := map[string]bool{}
	for _, w := range words {
		switch w {
		case string(ast.Query), string(ast.Mutation), string(ast.Subscription):
		default:
			return nil, fmt.Errorf("unknown operation type %q (query, mutation, subscription)", w)
		}
		if seen[w] {
			return nil, fmt.Errorf("operation type %s given twice", w)
		}
		seen[w] = true
	}
	return words, nil
}

// allows reports whether operations of kind pass.
func (g *Guard) allows(kind ast.Operation) bool {
	return g.allowedOps&opBit(kind) != 0
}

func opBit(kind ast.Operation) uint8 {
	switch kind {
	case ast.Query:
		return 1
	case ast.Mutation:
		return 2
	case ast.Subscription:
		return 4
	}
	return 0
}

// notAllowedMessage is the refusal of an operation type that does not pass:
// the historical message when only queries pass (docs/api.md "Errors").
func (g *Guard) notAllowedMessage(kind ast.Operation) string {
	if g.allowedOps == opBit(ast.Query) {
		return msgOnlyQueriesAreAllowed
	}
	return strings.ToUpper(string(kind[:1])) + string(kind[1:]) + " operations are not allowed"
}

// checkMethods refuses anything but GET and POST, and a method given twice.
func checkMethods(words []string) error {
	seen := map[string]bool{}
	for _, w := range words {
		if w != "GET" && w != "POST" {
			return fmt.Errorf("unknown method %q (GET, POST)", w)
		}
		if seen[w] {
			return fmt.Errorf("method %s given twice", w)
		}
		seen[w] = true
	}
	return nil
}
