// Package intscalar holds the part of GraphQL's Int that gqlparser leaves
// out: an Int is a signed 32-bit integer (GraphQL spec §3.5.1), but gqlparser
// validates any int64 literal and coerces any int64 variable. Unchecked, a
// value such as 2170000000 passes validation and reaches a resolver or a
// database column that cannot hold it. The guard and recordsd both refuse it
// here: Rule for literals in the document (a validation error), Variables for
// variable values (a coercion error, path "variable", as gqlparser's own).
package intscalar

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/validator/core"
)

// RuleName names Rule among the validation rules.
const RuleName = "IntWithin32Bits"

// Rule refuses Int literals (arguments, input-object fields, list elements,
// variable defaults) outside the signed 32-bit range.
var Rule = core.Rule{Name: RuleName, RuleFunc: ruleFunc}

func ruleFunc(observers *core.Events, addError core.AddErrFunc) {
	observers.OnValue(func(_ *core.Walker, v *ast.Value) {
		if v.Kind != ast.IntValue || v.Definition == nil || v.Definition.Name != "Int" {
			return
		}
		if _, err := strconv.ParseInt(v.Raw, 10, 32); err != nil {
			addError(core.Message("%s", message(v.Raw)), core.At(v.Position))
		}
	})
}

func message(v string) string {
	return "Int cannot represent non 32-bit signed integer value: " + v
}

// Variables checks variable values as validator.VariableValues returns them
// against the operation's definitions: every Int, also inside lists and input
// objects, must fit 32 bits. The error's path is that of gqlparser's coercion
// errors (variable, name, then fields and indexes).
func Variables(schema *ast.Schema, defs ast.VariableDefinitionList, values map[string]any) *gqlerror.Error {
	for _, d := range defs {
		v, ok := values[d.Variable]
		if !ok {
			continue
		}
		if err := check(schema, d.Type, v, ast.Path{ast.PathName("variable"), ast.PathName(d.Variable)}); err != nil {
			return err
		}
	}
	return nil
}

func check(schema *ast.Schema, t *ast.Type, v any, path ast.Path) *gqlerror.Error {
	if v == nil || t == nil {
		return nil
	}
	if t.Elem != nil {
		// gqlparser returns []any, or a typed slice such as []json.Number for
		// a single value given for a list.
		list := reflect.ValueOf(v)
		if list.Kind() != reflect.Slice {
			return check(schema, t.Elem, v, path)
		}
		for i := range list.Len() {
			if err := check(schema, t.Elem, list.Index(i).Interface(), append(path[:len(path):len(path)], ast.PathIndex(i))); err != nil {
				return err
			}
		}
		return nil
	}
	def := schema.Types[t.NamedType]
	switch {
	case def == nil:
		return nil
	case def.Kind == ast.InputObject:
		fields, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		for _, f := range def.Fields {
			if fv, ok := fields[f.Name]; ok {
				if err := check(schema, f.Type, fv, append(path[:len(path):len(path)], ast.PathName(f.Name))); err != nil {
					return err
				}
			}
		}
		return nil
	case def.Name == "Int":
		if s, fits := fits32(v); !fits {
			return gqlerror.ErrorPathf(path, "%s", message(s))
		}
	}
	return nil
}

// fits32 reports whether an Int variable value fits 32 bits, and the value
// as text for the message. Values of kinds gqlparser would not have accepted
// as an Int are left to it.
func fits32(v any) (string, bool) {
	switch n := v.(type) {
	case int:
		return strconv.Itoa(n), n >= math.MinInt32 && n <= math.MaxInt32
	case int64:
		return strconv.FormatInt(n, 10), n >= math.MinInt32 && n <= math.MaxInt32
	case int32:
		return "", true
	case float64:
		return strconv.FormatFloat(n, 'f', -1, 64), n >= math.MinInt32 && n <= math.MaxInt32
	case json.Number:
		_, err := strconv.ParseInt(string(n), 10, 32)
		return string(n), !errors.Is(err, strconv.ErrRange)
	case string:
		_, err := strconv.ParseInt(n, 10, 32)
		return n, !errors.Is(err, strconv.ErrRange)
	default:
		return fmt.Sprint(v), true
	}
}
