package introspect

import (
	"fmt"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
)

// The introspection types: __Schema, __Type, __Field, __InputValue,
// __EnumValue, __Directive. A field of one of them that the specification
// answers with null for a kind (fields of a SCALAR …) is null here, as
// graphql-js answers.

// typeRef is a __Type: a named type (def), or a NON_NULL or LIST wrapper
// (typ).
type typeRef struct {
	def *ast.Definition
	typ *ast.Type
}

// wrap is the __Type of t; a named type outside the schema has neither def
// nor typ and is written as null.
func (s *Schema) wrap(t *ast.Type) typeRef {
	if t == nil {
		return typeRef{}
	}
	if !t.NonNull && t.Elem == nil {
		return typeRef{def: s.byName[t.NamedType]}
	}
	return typeRef{typ: t}
}

// inputValue is an __InputValue: an argument of a field or directive, or an
// input field of an input object.
type inputValue struct {
	name, description string
	typ               *ast.Type
	defaultValue      *ast.Value
	directives        ast.DirectiveList
}

func argumentValues(args ast.ArgumentDefinitionList) []inputValue {
	out := make([]inputValue, 0, len(args))
	for _, a := range args {
		out = append(out, inputValue{a.Name, a.Description, a.Type, a.DefaultValue, a.Directives})
	}
	return out
}

func inputFieldValues(fields ast.FieldList) []inputValue {
	out := make([]inputValue, 0, len(fields))
	for _, f := range fields {
		out = append(out, inputValue{f.Name, f.Description, f.Type, f.DefaultValue, f.Directives})
	}
	return out
}

// object writes one object of type typeName: __typename is answered here,
// every other response key by member.
func (e *executor) object(typeName string, sets []ast.SelectionSet, member func(f *ast.Field, sub []ast.SelectionSet) error) error {
	groups, err := e.collect(typeName, sets)
	if err != nil {
		return err
	}
	e.buf = append(e.buf, '{')
	for i, g := range groups {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.key(g.key)
		f := g.fields[0]
		if f.Name == "__typename" {
			e.str(typeName)
			continue
		}
		if err := member(f, g.subSelections()); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

// list writes a JSON array of n items.
func (e *executor) list(n int, item func(i int) error) error {
	e.buf = append(e.buf, '[')
	for i := range n {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := item(i); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, ']')
	return nil
}

func noField(typeName, field string) error {
	return fmt.Errorf("introspect: %s has no field %q", typeName, field)
}

func (e *executor) schemaObject(sets []ast.SelectionSet) error {
	s := e.schema
	return e.object("__Schema", sets, func(f *ast.Field, sub []ast.SelectionSet) error {
		switch f.Name {
		case "description":
			e.optional(s.s.Description)
		case "types":
			return e.list(len(s.types), func(i int) error { return e.typeObject(typeRef{def: s.types[i]}, sub) })
		case "queryType":
			return e.typeObject(typeRef{def: s.s.Query}, sub)
		case "mutationType":
			return e.typeObject(typeRef{def: s.mutation}, sub)
		case "subscriptionType":
			return e.typeObject(typeRef{def: s.subscription}, sub)
		case "directives":
			return e.list(len(s.directives), func(i int) error { return e.directiveObject(s.directives[i], sub) })
		default:
			return noField("__Schema", f.Name)
		}
		return nil
	})
}

func (e *executor) typeObject(t typeRef, sets []ast.SelectionSet) error {
	if t.def == nil && t.typ == nil {
		e.null()
		return nil
	}
	def := t.def
	kind := ast.DefinitionKind("")
	if def != nil {
		kind = def.Kind
	}
	return e.object("__Type", sets, func(f *ast.Field, sub []ast.SelectionSet) error {
		switch f.Name {
		case "kind":
			switch {
			case def != nil:
				e.str(string(def.Kind))
			case t.typ.NonNull:
				e.str("NON_NULL")
			default:
				e.str("LIST")
			}
		case "name":
			if def == nil {
				e.null()
			} else {
				e.str(def.Name)
			}
		case "description":
			if def == nil {
				e.null()
			} else {
				e.optional(def.Description)
			}
		case "specifiedByURL":
			e.specifiedByURL(def)
		case "fields":
			if kind != ast.Object && kind != ast.Interface {
				e.null()
				return nil
			}
			return e.fieldList(f, def, sub)
		case "interfaces":
			if kind != ast.Object && kind != ast.Interface {
				e.null()
				return nil
			}
			return e.namedTypes(def.Interfaces, sub)
		case "possibleTypes":
			if kind != ast.Interface && kind != ast.Union {
				e.null()
				return nil
			}
			var names []string
			for _, p := range e.schema.s.PossibleTypes[def.Name] {
				if p.Kind == ast.Object {
					names = append(names, p.Name)
				}
			}
			return e.namedTypes(names, sub)
		case "enumValues":
			if kind != ast.Enum {
				e.null()
				return nil
			}
			return e.enumValueList(f, def.EnumValues, sub)
		case "inputFields":
			if kind != ast.InputObject {
				e.null()
				return nil
			}
			return e.inputValueList(f, inputFieldValues(def.Fields), sub)
		case "ofType":
			if t.typ == nil {
				e.null()
				return nil
			}
			if t.typ.NonNull {
				inner := *t.typ
				inner.NonNull = false
				return e.typeObject(e.schema.wrap(&inner), sub)
			}
			return e.typeObject(e.schema.wrap(t.typ.Elem), sub)
		case "isOneOf":
			if kind != ast.InputObject {
				e.null()
				return nil
			}
			e.boolean(def.Directives.ForName("oneOf") != nil)
		default:
			return noField("__Type", f.Name)
		}
		return nil
	})
}

func (e *executor) specifiedByURL(def *ast.Definition) {
	if def == nil || def.Kind != ast.Scalar {
		e.null()
		return
	}
	d := def.Directives.ForName("specifiedBy")
	if d == nil {
		e.null()
		return
	}
	url := d.Arguments.ForName("url")
	if url == nil || url.Value == nil {
		e.null()
		return
	}
	e.str(url.Value.Raw)
}

// namedTypes writes the types named names that the schema holds (a name
// outside it is left out: nothing outside a view is ever named).
func (e *executor) namedTypes(names []string, sub []ast.SelectionSet) error {
	defs := make([]*ast.Definition, 0, len(names))
	for _, n := range names {
		if def := e.schema.byName[n]; def != nil {
			defs = append(defs, def)
		}
	}
	return e.list(len(defs), func(i int) error { return e.typeObject(typeRef{def: defs[i]}, sub) })
}

func (e *executor) fieldList(f *ast.Field, def *ast.Definition, sub []ast.SelectionSet) error {
	all, err := e.includeDeprecated(f)
	if err != nil {
		return err
	}
	fields := make([]*ast.FieldDefinition, 0, len(def.Fields))
	for _, fd := range def.Fields {
		if strings.HasPrefix(fd.Name, "__") {
			continue
		}
		if !all && fd.Directives.ForName("deprecated") != nil {
			continue
		}
		fields = append(fields, fd)
	}
	return e.list(len(fields), func(i int) error { return e.fieldObject(fields[i], sub) })
}

func (e *executor) fieldObject(fd *ast.FieldDefinition, sets []ast.SelectionSet) error {
	return e.object("__Field", sets, func(f *ast.Field, sub []ast.SelectionSet) error {
		switch f.Name {
		case "name":
			e.str(fd.Name)
		case "description":
			e.optional(fd.Description)
		case "args":
			return e.inputValueList(f, argumentValues(fd.Arguments), sub)
		case "type":
			return e.typeObject(e.schema.wrap(fd.Type), sub)
		case "isDeprecated":
			e.boolean(fd.Directives.ForName("deprecated") != nil)
		case "deprecationReason":
			e.deprecationReason(fd.Directives)
		default:
			return noField("__Field", f.Name)
		}
		return nil
	})
}

func (e *executor) inputValueList(f *ast.Field, values []inputValue, sub []ast.SelectionSet) error {
	all, err := e.includeDeprecated(f)
	if err != nil {
		return err
	}
	if !all {
		kept := values[:0]
		for _, v := range values {
			if v.directives.ForName("deprecated") == nil {
				kept = append(kept, v)
			}
		}
		values = kept
	}
	return e.list(len(values), func(i int) error { return e.inputValueObject(values[i], sub) })
}

func (e *executor) inputValueObject(v inputValue, sets []ast.SelectionSet) error {
	return e.object("__InputValue", sets, func(f *ast.Field, sub []ast.SelectionSet) error {
		switch f.Name {
		case "name":
			e.str(v.name)
		case "description":
			e.optional(v.description)
		case "type":
			return e.typeObject(e.schema.wrap(v.typ), sub)
		case "defaultValue":
			if v.defaultValue == nil {
				e.null()
			} else {
				e.str(v.defaultValue.String())
			}
		case "isDeprecated":
			e.boolean(v.directives.ForName("deprecated") != nil)
		case "deprecationReason":
			e.deprecationReason(v.directives)
		default:
			return noField("__InputValue", f.Name)
		}
		return nil
	})
}

func (e *executor) enumValueList(f *ast.Field, values ast.EnumValueList, sub []ast.SelectionSet) error {
	all, err := e.includeDeprecated(f)
	if err != nil {
		return err
	}
	kept := make([]*ast.EnumValueDefinition, 0, len(values))
	for _, v := range values {
		if all || v.Directives.ForName("deprecated") == nil {
			kept = append(kept, v)
		}
	}
	return e.list(len(kept), func(i int) error { return e.enumValueObject(kept[i], sub) })
}

func (e *executor) enumValueObject(v *ast.EnumValueDefinition, sets []ast.SelectionSet) error {
	return e.object("__EnumValue", sets, func(f *ast.Field, _ []ast.SelectionSet) error {
		switch f.Name {
		case "name":
			e.str(v.Name)
		case "description":
			e.optional(v.Description)
		case "isDeprecated":
			e.boolean(v.Directives.ForName("deprecated") != nil)
		case "deprecationReason":
			e.deprecationReason(v.Directives)
		default:
			return noField("__EnumValue", f.Name)
		}
		return nil
	})
}

func (e *executor) directiveObject(d *ast.DirectiveDefinition, sets []ast.SelectionSet) error {
	return e.object("__Directive", sets, func(f *ast.Field, sub []ast.SelectionSet) error {
		switch f.Name {
		case "name":
			e.str(d.Name)
		case "description":
			e.optional(d.Description)
		case "isRepeatable":
			e.boolean(d.IsRepeatable)
		case "locations":
			return e.list(len(d.Locations), func(i int) error {
				e.str(string(d.Locations[i]))
				return nil
			})
		case "args":
			return e.inputValueList(f, argumentValues(d.Arguments), sub)
		default:
			return noField("__Directive", f.Name)
		}
		return nil
	})
}

// deprecationReason writes the reason of a @deprecated among dirs: its
// reason argument, else the directive's default; null when not deprecated.
func (e *executor) deprecationReason(dirs ast.DirectiveList) {
	d := dirs.ForName("deprecated")
	if d == nil {
		e.null()
		return
	}
	if a := d.Arguments.ForName("reason"); a != nil && a.Value != nil && (a.Value.Kind == ast.StringValue || a.Value.Kind == ast.BlockValue) {
		e.str(a.Value.Raw)
		return
	}
	if r := e.schema.deprecatedDefault; r != nil {
		e.str(*r)
		return
	}
	e.null()
}
