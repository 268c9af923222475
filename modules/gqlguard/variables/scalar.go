package variables

import (
	"math"
	"strconv"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/civicgate/civicgate/internal/rawjson"
)

// scalarVariablesValid is the allocation-free check of the usual variables
// object: every variable a built-in scalar or an enum (possibly non-null),
// given as a matching JSON literal. It answers true only when coercion
// (validator.VariableValues + intscalar) would accept raw; anything it does
// not recognise — a list, an input object, a custom scalar, an escaped or
// repeated or unknown key, a non-integer Int, a missing non-null variable —
// answers false, and the caller coerces as before, which gives the exact
// refusal. With unique variables on every request (the memo always misses)
// this is what keeps the check cheap (BENCHMARKS.md).
func scalarVariablesValid(schema *ast.Schema, defs ast.VariableDefinitionList, raw []byte) bool {
	if len(defs) > 64 {
		return false
	}
	var seen uint64
	if raw != nil {
		i := rawjson.SkipWS(raw, 0)
		if i >= len(raw) || raw[i] != '{' {
			return false
		}
		i++
		for {
			i = rawjson.SkipWS(raw, i)
			if i >= len(raw) {
				return false
			}
			if raw[i] == '}' {
				break
			}
			if raw[i] == ',' {
				i = rawjson.SkipWS(raw, i+1)
			}
			if i >= len(raw) || raw[i] != '"' {
				return false
			}
			ks, ke, kesc := rawjson.ScanString(raw, i)
			if kesc {
				return false
			}
			idx := -1
			for j, d := range defs {
				if d.Variable == string(raw[ks:ke]) {
					idx = j
					break
				}
			}
			if idx < 0 || seen&(1<<idx) != 0 {
				return false
			}
			seen |= 1 << idx
			i = rawjson.SkipWS(raw, ke+1)
			i = rawjson.SkipWS(raw, i+1) // ':'
			if i >= len(raw) {
				return false
			}
			vs := i
			ve, kind, esc := rawjson.SkipValue(raw, i)
			if !scalarLiteralValid(schema, defs[idx].Type, raw[vs:ve], kind, esc) {
				return false
			}
			i = ve
		}
	}
	for j, d := range defs {
		if seen&(1<<j) == 0 && d.Type.NonNull && d.DefaultValue == nil {
			return false
		}
	}
	return true
}

// scalarLiteralValid reports whether the raw JSON value v (of kind, see
// skipValue) certainly coerces to typ.
func scalarLiteralValid(schema *ast.Schema, typ *ast.Type, v []byte, kind byte, esc bool) bool {
	if typ.Elem != nil {
		return false
	}
	if kind == 'n' {
		return !typ.NonNull
	}
	switch typ.NamedType {
	case "Int":
		return kind == '0' && isInt32Literal(v)
	case "Float":
		return kind == '0'
	case "String":
		return kind == '"'
	case "ID":
		return kind == '"' || (kind == '0' && isInt32Literal(v))
	case "Boolean":
		return kind == 't' || kind == 'f'
	}
	def := schema.Types[typ.NamedType]
	if def == nil || def.Kind != ast.Enum || kind != '"' || esc {
		return false
	}
	return def.EnumValues.ForName(string(v[1:len(v)-1])) != nil
}

// isInt32Literal: an optional minus and digits only, within 32 bits.
func isInt32Literal(v []byte) bool {
	digits := v
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 11 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return err == nil && n >= math.MinInt32 && n <= math.MaxInt32
}
