package tooldef

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/vektah/gqlparser/v2/ast"
)

// The input schema of a tool is JSON Schema 2020-12 for the operation's
// variables, one property per variable, against the GraphQL schema:
//
//	Int            {"type":"integer","minimum":-2147483648,"maximum":2147483647}
//	Float          {"type":"number"}
//	String, ID     {"type":"string"}
//	Boolean        {"type":"boolean"}
//	enum           {"type":"string","enum":[…]}, value descriptions in the description
//	input object   {"$ref":"#/$defs/<Name>"}; the $def has properties, required (non-null
//	               fields without a default), additionalProperties false, descriptions;
//	               recursion goes through the $ref
//	list           {"type":"array","items":…}
//	custom scalar  any JSON value ({} with a description; non-null: any type but null)
//
// A nullable type adds "null" to its type ([T, "null"], null to an enum, and
// anyOf [$ref, {"type":"null"}] for an input object); a non-null variable or
// field without a default is required; defaults are given as "default".
// argType is the same shape compiled for the argument checker (arguments.go),
// built by the same walk so the two cannot disagree.

// int32 bounds of GraphQL Int.
const (
	minInt = math.MinInt32
	maxInt = math.MaxInt32
)

type argKind uint8

const (
	kindInt argKind = iota + 1
	kindFloat
	kindString // String and ID
	kindBoolean
	kindEnum
	kindObject
	kindList
	kindAny // custom scalar
)

// argType is one GraphQL input type, compiled for checking arguments.
type argType struct {
	kind     argKind
	nonNull  bool
	typeName string   // the named type (for messages)
	values   []string // enum values, in schema order
	elem     *argType // list element
	object   *inputObject
}

// inputObject is an input object type; shared by every use, so a recursive
// type is one node.
type inputObject struct {
	name   string
	fields []inputField
}

type inputField struct {
	name     string
	typ      *argType
	required bool // non-null without a default
}

// inputBuilder builds argTypes and JSON Schemas for one tool; input objects
// are built once each (their $defs).
type inputBuilder struct {
	schema  *ast.Schema
	objects map[string]*inputObject
	defs    map[string]*jsonschema.Schema
}

func newInputBuilder(s *ast.Schema) *inputBuilder {
	return &inputBuilder{schema: s, objects: map[string]*inputObject{}, defs: map[string]*jsonschema.Schema{}}
}

// property returns the checker type and the JSON Schema of a value of type t
// described by desc, with default def (nil: none).
func (b *inputBuilder) property(t *ast.Type, desc string, def *ast.Value) (*argType, *jsonschema.Schema, error) {
	at, s, err := b.typeOf(t)
	if err != nil {
		return nil, nil, err
	}
	named := at
	for named.kind == kindList {
		named = named.elem
	}
	switch named.kind {
	case kindEnum:
		def := b.schema.Types[named.typeName]
		if desc == "" {
			desc = def.Description
		}
		desc = joinText(desc, enumValuesText(def))
	case kindAny:
		desc = joinText(desc, customScalarText(b.schema.Types[named.typeName]))
	}
	if desc != "" {
		if s.Ref != "" { // keep the $def shared: describe beside the $ref
			s = &jsonschema.Schema{Ref: s.Ref, Description: desc}
		} else {
			s.Description = desc
		}
	}
	if def != nil {
		v, err := def.Value(nil)
		if err != nil {
			return nil, nil, fmt.Errorf("default value: %w", err)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, nil, fmt.Errorf("default value: %w", err)
		}
		s.Default = raw
	}
	return at, s, nil
}

// typeOf returns the checker type and the JSON Schema (without description
// or default) of a value of type t.
func (b *inputBuilder) typeOf(t *ast.Type) (*argType, *jsonschema.Schema, error) {
	if t.Elem != nil {
		elem, es, err := b.typeOf(t.Elem)
		if err != nil {
			return nil, nil, err
		}
		return &argType{kind: kindList, nonNull: t.NonNull, elem: elem},
			&jsonschema.Schema{Type: nullable("array", t.NonNull), Types: nullableTypes("array", t.NonNull), Items: es}, nil
	}
	def := b.schema.Types[t.NamedType]
	if def == nil {
		return nil, nil, fmt.Errorf("type %s is not in the schema", t.NamedType)
	}
	at := &argType{nonNull: t.NonNull, typeName: def.Name}
	s := &jsonschema.Schema{}
	switch def.Kind {
	case ast.Scalar:
		switch def.Name {
		case "Int":
			at.kind = kindInt
			s.Minimum, s.Maximum = jsonschema.Ptr(float64(minInt)), jsonschema.Ptr(float64(maxInt))
			s.Type, s.Types = nullable("integer", t.NonNull), nullableTypes("integer", t.NonNull)
		case "Float":
			at.kind = kindFloat
			s.Type, s.Types = nullable("number", t.NonNull), nullableTypes("number", t.NonNull)
		case "String", "ID":
			at.kind = kindString
			s.Type, s.Types = nullable("string", t.NonNull), nullableTypes("string", t.NonNull)
		case "Boolean":
			at.kind = kindBoolean
			s.Type, s.Types = nullable("boolean", t.NonNull), nullableTypes("boolean", t.NonNull)
		default:
			at.kind = kindAny
			if t.NonNull {
				s.Types = []string{"string", "number", "boolean", "object", "array"}
			}
		}
	case ast.Enum:
		at.kind = kindEnum
		s.Type, s.Types = nullable("string", t.NonNull), nullableTypes("string", t.NonNull)
		for _, v := range def.EnumValues {
			at.values = append(at.values, v.Name)
			s.Enum = append(s.Enum, v.Name)
		}
		if !t.NonNull {
			s.Enum = append(s.Enum, nil)
		}
	case ast.InputObject:
		at.kind = kindObject
		obj, err := b.inputObject(def)
		if err != nil {
			return nil, nil, err
		}
		at.object = obj
		ref := &jsonschema.Schema{Ref: "#/$defs/" + def.Name}
		if t.NonNull {
			return at, ref, nil
		}
		return at, &jsonschema.Schema{AnyOf: []*jsonschema.Schema{ref, {Type: "null"}}}, nil
	default:
		return nil, nil, fmt.Errorf("type %s is a %s, not an input type", def.Name, strings.ToLower(string(def.Kind)))
	}
	return at, s, nil
}

// inputObject builds the input object def once; a recursive reference finds
// it in b.objects while its fields are still being built.
func (b *inputBuilder) inputObject(def *ast.Definition) (*inputObject, error) {
	if obj, ok := b.objects[def.Name]; ok {
		return obj, nil
	}
	obj := &inputObject{name: def.Name}
	b.objects[def.Name] = obj
	s := &jsonschema.Schema{
		Type:                 "object",
		Description:          def.Description,
		Properties:           map[string]*jsonschema.Schema{},
		AdditionalProperties: falseSchema(),
	}
	b.defs[def.Name] = s
	for _, f := range def.Fields {
		at, fs, err := b.property(f.Type, f.Description, f.DefaultValue)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", def.Name, f.Name, err)
		}
		required := f.Type.NonNull && f.DefaultValue == nil
		obj.fields = append(obj.fields, inputField{name: f.Name, typ: at, required: required})
		s.Properties[f.Name] = fs
		s.PropertyOrder = append(s.PropertyOrder, f.Name)
		if required {
			s.Required = append(s.Required, f.Name)
		}
	}
	return obj, nil
}

// falseSchema is the schema no value is valid against; jsonschema-go writes
// it as `false`.
func falseSchema() *jsonschema.Schema { return &jsonschema.Schema{Not: &jsonschema.Schema{}} }

func nullable(typ string, nonNull bool) string {
	if nonNull {
		return typ
	}
	return ""
}

func nullableTypes(typ string, nonNull bool) []string {
	if nonNull {
		return nil
	}
	return []string{typ, "null"}
}

// enumValuesText describes the values of an enum that the schema describes
// (deprecated ones marked), or "" when none is described.
func enumValuesText(def *ast.Definition) string {
	if def == nil {
		return ""
	}
	var parts []string
	described := false
	for _, v := range def.EnumValues {
		text := v.Name
		if v.Description != "" {
			text += ": " + strings.TrimSuffix(v.Description, ".")
			described = true
		}
		if v.Directives.ForName("deprecated") != nil {
			text += " (deprecated)"
			described = true
		}
		parts = append(parts, text)
	}
	if !described {
		return ""
	}
	return strings.Join(parts, ". ") + "."
}

func customScalarText(def *ast.Definition) string {
	text := "GraphQL scalar " + def.Name
	if def.Description != "" {
		text += ": " + strings.TrimSuffix(def.Description, ".")
	}
	return text + ". Any JSON value; the GraphQL server checks it."
}

// joinText joins two descriptions into one, either possibly empty.
func joinText(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	case strings.HasSuffix(a, ".") || strings.HasSuffix(a, "?") || strings.HasSuffix(a, "!"):
		return a + " " + b
	}
	return a + ". " + b
}
