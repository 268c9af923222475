package analysis

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
)

// Families (docs/design.md D22): a family names root fields of any
// operation type — `Type.field` (the schema's own root type name, e.g.
// Mutation.borrowBook) or a bare name when exactly one root type has that
// field. An operation touches the families of its root fields; the caller
// must own every one of them (entitlements).

// rootField is a root field of one operation type.
type rootField struct {
	kind ast.Operation
	name string
}

// operationKinds in the order the Caddyfile and messages name them.
var operationKinds = []ast.Operation{ast.Query, ast.Mutation, ast.Subscription}

// resolveRootField finds the root field a family line names.
func resolveRootField(s *ast.Schema, ref string) (rootField, error) {
	if typ, field, ok := strings.Cut(ref, "."); ok {
		for _, kind := range operationKinds {
			if def := RootType(s, kind); def != nil && def.Name == typ {
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
		if def := RootType(s, kind); def != nil && def.Fields.ForName(ref) != nil {
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
		if def := RootType(s, kind); def != nil {
			names = append(names, def.Name)
		}
	}
	return strings.Join(names, " or ")
}

// Families maps configured root fields to their family.
type Families struct {
	byField map[rootField]string
}

// NewFamilies resolves the configured families (family name → root field
// references) against the schema. A reference to no root field, or to
// several, or a root field in two families is an error naming it.
func NewFamilies(s *ast.Schema, families map[string][]string) (Families, error) {
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
				return Families{}, fmt.Errorf("family %s: %w", name, err)
			}
			if other, dup := out[rf]; dup {
				return Families{}, fmt.Errorf("root field %q is in families %s and %s", ref, other, name)
			}
			out[rf] = name
		}
	}
	return Families{byField: out}, nil
}

// Configured reports whether any family is configured (without one,
// entitlements are not checked).
func (fs Families) Configured() bool { return len(fs.byField) > 0 }

// OperationFamilies is what entitlement needs of an operation, computed
// once per compiled document: the distinct families its root fields belong
// to (List, sorted), and whether one of them belongs to none (Orphan).
type OperationFamilies struct {
	List   []string
	Orphan bool
}

// Of returns the families an operation of kind with these root field names
// touches.
func (fs Families) Of(kind ast.Operation, rootNames []string) OperationFamilies {
	var f OperationFamilies
	for _, n := range rootNames {
		fam, ok := fs.byField[rootField{kind: kind, name: n}]
		if !ok {
			f.Orphan = true
			continue
		}
		if !slices.Contains(f.List, fam) {
			f.List = append(f.List, fam)
		}
	}
	slices.Sort(f.List)
	return f
}

// Entitled reports whether a caller owning the comma-separated families
// owned may run the operation; with check false nothing is checked. A
// root field in no family is refused while checking: a field forgotten in
// the configuration must not bypass entitlements. Introspection fields
// belong to no family and are never refused here.
func (f OperationFamilies) Entitled(owned string, check bool) bool {
	if !check {
		return true
	}
	if f.Orphan {
		return false
	}
	for _, fam := range f.List {
		if !listContains(owned, fam) {
			return false
		}
	}
	return true
}

// Refused names the families the caller does not own, comma-separated in
// name order: what a not-entitled refusal tells (docs/design.md D41). ""
// when only a root field in no family was refused: no tier owns it.
func (f OperationFamilies) Refused(owned string) string {
	var out strings.Builder
	for _, fam := range f.List {
		if listContains(owned, fam) {
			continue
		}
		if out.Len() > 0 {
			out.WriteByte(',')
		}
		out.WriteString(fam)
	}
	return out.String()
}

// listContains reports whether the comma-separated list holds item.
func listContains(list, item string) bool {
	for list != "" {
		var part string
		part, list, _ = strings.Cut(list, ",")
		if strings.TrimSpace(part) == item {
			return true
		}
	}
	return false
}

// Names returns the configured family names, sorted.
func (fs Families) Names() []string {
	var names []string
	for _, fam := range fs.byField {
		if !slices.Contains(names, fam) {
			names = append(names, fam)
		}
	}
	slices.Sort(names)
	return names
}

// Roots returns the root fields of the families keep says yes to, by the
// name of their root type in s: what a schema view starts from
// (docs/design.md D67).
func (fs Families) Roots(s *ast.Schema, keep func(family string) bool) map[string][]string {
	out := map[string][]string{}
	for rf, fam := range fs.byField {
		if def := RootType(s, rf.kind); def != nil && keep(fam) {
			out[def.Name] = append(out[def.Name], rf.name)
		}
	}
	for _, fields := range out {
		slices.Sort(fields)
	}
	return out
}
