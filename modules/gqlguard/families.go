package gqlguard

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
)

// Families and operation types (docs/design.md D22): a family names root
// fields of any operation type — `Type.field` (the schema's own root type
// name, e.g. Mutation.borrowBook) or a bare name when exactly one root type
// has that field — and `operations` says which operation types pass.

// rootField is a root field of one operation type.
type rootField struct {
	kind ast.Operation
	name string
}

// operationKinds in the order the Caddyfile and messages name them.
var operationKinds = []ast.Operation{ast.Query, ast.Mutation, ast.Subscription}

// rootType returns the schema's root type of kind, or nil.
func rootType(s *ast.Schema, kind ast.Operation) *ast.Definition {
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

// resolveRootField finds the root field a family line names.
func resolveRootField(s *ast.Schema, ref string) (rootField, error) {
	if typ, field, ok := strings.Cut(ref, "."); ok {
		for _, kind := range operationKinds {
			if def := rootType(s, kind); def != nil && def.Name == typ {
				if def.Fields.ForName(field) == nil {
					return rootField{}, fmt.Errorf("root field %q is not a field of %s", ref, def.Name)
				}
				return rootField{kind: kind, name: field}, nil
			}
		}
		return rootField{}, fmt.Errorf("%q: %s is not a root operation type of the schema", ref, typ)
	}
	var found []rootField
	var types []string
	for _, kind := range operationKinds {
		if def := rootType(s, kind); def != nil && def.Fields.ForName(ref) != nil {
			found = append(found, rootField{kind: kind, name: ref})
			types = append(types, def.Name+"."+ref)
		}
	}
	switch len(found) {
	case 0:
		return rootField{}, fmt.Errorf("root field %q is not a field of %s", ref, rootTypeNames(s))
	case 1:
		return found[0], nil
	}
	return rootField{}, fmt.Errorf("root field %q is ambiguous: write one of %s", ref, strings.Join(types, ", "))
}

func rootTypeNames(s *ast.Schema) string {
	var names []string
	for _, kind := range operationKinds {
		if def := rootType(s, kind); def != nil {
			names = append(names, def.Name)
		}
	}
	return strings.Join(names, " or ")
}

// buildFieldFamilies maps every configured root field to its family.
func buildFieldFamilies(s *ast.Schema, families map[string][]string) (map[rootField]string, error) {
	out := make(map[rootField]string)
	names := make([]string, 0, len(families))
	for name := range families {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, ref := range families[name] {
			rf, err := resolveRootField(s, ref)
			if err != nil {
				return nil, fmt.Errorf("family %s: %w", name, err)
			}
			if other, dup := out[rf]; dup {
				return nil, fmt.Errorf("root field %q is in families %s and %s", ref, other, name)
			}
			out[rf] = name
		}
	}
	return out, nil
}

// opFamilies is what entitlement needs of an operation, computed once per
// compiled document: the distinct families its root fields belong to, and
// whether one of them belongs to none.
type opFamilies struct {
	list   []string
	orphan bool
}

func (g *Guard) familiesOf(kind ast.Operation, rootNames []string) opFamilies {
	var f opFamilies
	for _, n := range rootNames {
		fam, ok := g.fieldFamily[rootField{kind: kind, name: n}]
		if !ok {
			f.orphan = true
			continue
		}
		if !slices.Contains(f.list, fam) {
			f.list = append(f.list, fam)
		}
	}
	slices.Sort(f.list)
	return f
}

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
