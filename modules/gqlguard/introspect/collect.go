package introspect

import (
	"fmt"
	"strconv"

	"github.com/vektah/gqlparser/v2/ast"
)

// The executor's bookkeeping: collecting an object's fields as the
// specification's CollectFields does (response keys in selection order,
// fields of one key merged, @skip and @include applied, fragments whose type
// condition applies expanded), reading arguments, and writing JSON.

// executor answers one operation into buf.
type executor struct {
	schema    *Schema
	fragments ast.FragmentDefinitionList
	vars      map[string]any
	buf       []byte
}

// group is the fields of one response key.
type group struct {
	key    string
	fields []*ast.Field
}

// subSelections are the selection sets of the group's fields, merged when
// the group's object is collected.
func (g group) subSelections() []ast.SelectionSet {
	sets := make([]ast.SelectionSet, 0, len(g.fields))
	for _, f := range g.fields {
		if len(f.SelectionSet) > 0 {
			sets = append(sets, f.SelectionSet)
		}
	}
	return sets
}

// collect returns the fields the selection sets select on an object of
// type typeName, grouped by response key in the order keys first appear.
func (e *executor) collect(typeName string, sets []ast.SelectionSet) ([]group, error) {
	var groups []group
	var visited map[string]bool
	var walk func(set ast.SelectionSet) error
	walk = func(set ast.SelectionSet) error {
		for _, sel := range set {
			switch sel := sel.(type) {
			case *ast.Field:
				ok, err := e.included(sel.Directives)
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
				key := sel.Alias
				if key == "" {
					key = sel.Name
				}
				if i := indexOf(groups, key); i >= 0 {
					groups[i].fields = append(groups[i].fields, sel)
				} else {
					groups = append(groups, group{key: key, fields: []*ast.Field{sel}})
				}
			case *ast.InlineFragment:
				ok, err := e.included(sel.Directives)
				if err != nil {
					return err
				}
				if ok && e.applies(sel.TypeCondition, typeName) {
					if err := walk(sel.SelectionSet); err != nil {
						return err
					}
				}
			case *ast.FragmentSpread:
				if visited[sel.Name] {
					continue
				}
				ok, err := e.included(sel.Directives)
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
				if visited == nil {
					visited = map[string]bool{}
				}
				visited[sel.Name] = true
				f := e.fragments.ForName(sel.Name)
				if f == nil {
					return fmt.Errorf("introspect: no fragment %q", sel.Name)
				}
				if e.applies(f.TypeCondition, typeName) {
					if err := walk(f.SelectionSet); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	for _, set := range sets {
		if err := walk(set); err != nil {
			return nil, err
		}
	}
	return groups, nil
}

func indexOf(groups []group, key string) int {
	for i := range groups {
		if groups[i].key == key {
			return i
		}
	}
	return -1
}

// applies reports whether a fragment on condition applies to an object of
// type typeName: the same type, or an abstract type it is a possible type of.
func (e *executor) applies(condition, typeName string) bool {
	if condition == "" || condition == typeName {
		return true
	}
	for _, def := range e.schema.s.PossibleTypes[condition] {
		if def.Name == typeName {
			return true
		}
	}
	return false
}

// included applies @skip and @include.
func (e *executor) included(dirs ast.DirectiveList) (bool, error) {
	for _, d := range dirs {
		if d.Name != "skip" && d.Name != "include" {
			continue
		}
		a := d.Arguments.ForName("if")
		if a == nil {
			return false, fmt.Errorf("introspect: @%s without if", d.Name)
		}
		v, err := a.Value.Value(e.vars)
		if err != nil {
			return false, fmt.Errorf("introspect: @%s: %w", d.Name, err)
		}
		b, ok := v.(bool)
		if !ok {
			return false, fmt.Errorf("introspect: @%s(if:) is not a Boolean", d.Name)
		}
		if (d.Name == "skip") == b {
			return false, nil
		}
	}
	return true, nil
}

// arg is the value of the argument name of f (nil when not given).
func (e *executor) arg(f *ast.Field, name string) (any, error) {
	a := f.Arguments.ForName(name)
	if a == nil {
		return nil, nil
	}
	v, err := a.Value.Value(e.vars)
	if err != nil {
		return nil, fmt.Errorf("introspect: argument %s: %w", name, err)
	}
	return v, nil
}

// includeDeprecated reads the includeDeprecated argument (default false).
func (e *executor) includeDeprecated(f *ast.Field) (bool, error) {
	v, err := e.arg(f, "includeDeprecated")
	if err != nil || v == nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("introspect: includeDeprecated is not a Boolean")
	}
	return b, nil
}

// JSON writing.

func (e *executor) key(k string) {
	e.str(k)
	e.buf = append(e.buf, ':')
}

func (e *executor) null() { e.buf = append(e.buf, "null"...) }

func (e *executor) boolean(b bool) { e.buf = strconv.AppendBool(e.buf, b) }

// optional writes s, or null when s is empty (descriptions).
func (e *executor) optional(s string) {
	if s == "" {
		e.null()
		return
	}
	e.str(s)
}

const hex = "0123456789abcdef"

// str writes s as a JSON string: quotes, backslashes and control
// characters escaped, nothing else (no HTML escaping).
func (e *executor) str(s string) {
	b := append(e.buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	e.buf = append(b, '"')
}
