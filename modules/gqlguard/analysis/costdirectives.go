package analysis

import (
	"math"
	"strconv"

	"github.com/vektah/gqlparser/v2/ast"
)

// The GraphQL cost directives (the IBM "GraphQL Cost Directives"
// specification, as Apollo Router, Cosmo, Hive Router and Grafbase read
// them; docs/design.md D24):
//
//	directive @cost(weight: String!) on ARGUMENT_DEFINITION | ENUM | FIELD_DEFINITION | INPUT_FIELD_DEFINITION | OBJECT | SCALAR
//	directive @listSize(assumedSize: Int, slicingArguments: [String!], sizedFields: [String!], requireOneSlicingArgument: Boolean = true) on FIELD_DEFINITION
//
// A field's own weight is its @cost, else its type's @cost, else 1 for a
// composite and 0 for a leaf (the guard's model before the directives), plus
// the @cost of every argument given (once, not per element). A list field is sized by its first
// slicing argument present, else its assumedSize, else limit_argument, else
// default_list_size; a field with sizedFields hands its slicing argument
// down to the list fields of its selection (as a page's limit does). A
// schema without the directives costs what it did before. Weights are
// Int or String (parsed as a number, rounded up).

const (
	directiveCost     = "cost"
	directiveListSize = "listSize"
)

// fieldWeight returns f's own weight under the cost directives (counted
// per element of a list) and the weight of its arguments (counted once);
// object says f selects fields (a composite).
func (w *Walker) fieldWeight(f *ast.Field, object bool) (weight, args int64) {
	if object {
		weight = 1
	}
	def := f.Definition
	if def == nil {
		return weight, 0
	}
	if v, ok := costWeight(def.Directives); ok {
		weight = v
	} else if w.schema != nil && def.Type != nil {
		if t := w.schema.Types[def.Type.Name()]; t != nil {
			if v, ok := costWeight(t.Directives); ok {
				weight = v
			}
		}
	}
	for _, a := range f.Arguments {
		if ad := def.Arguments.ForName(a.Name); ad != nil {
			if v, ok := costWeight(ad.Directives); ok {
				args = SatAdd(args, v)
			}
		}
	}
	return weight, args
}

// costWeight reads @cost(weight:) from a directive list.
func costWeight(list ast.DirectiveList) (int64, bool) {
	d := list.ForName(directiveCost)
	if d == nil {
		return 0, false
	}
	a := d.Arguments.ForName("weight")
	if a == nil || a.Value == nil {
		return 0, false
	}
	switch a.Value.Kind {
	case ast.IntValue:
		return parseLimitLiteral(a.Value.Raw), true
	case ast.StringValue, ast.FloatValue:
		f, err := strconv.ParseFloat(a.Value.Raw, 64)
		if err != nil || f <= 0 || math.IsNaN(f) {
			return 0, err == nil
		}
		if f >= float64(Saturated) {
			return Saturated, true
		}
		return int64(math.Ceil(f)), true
	}
	return 0, false
}

// listSize is a field definition's @listSize.
type listSize struct {
	assumed    int64
	hasAssumed bool
	slicing    []string
}

func listSizeOf(def *ast.FieldDefinition) (listSize, bool) {
	if def == nil {
		return listSize{}, false
	}
	d := def.Directives.ForName(directiveListSize)
	if d == nil {
		return listSize{}, false
	}
	var ls listSize
	if a := d.Arguments.ForName("assumedSize"); a != nil && a.Value != nil && a.Value.Kind == ast.IntValue {
		ls.assumed, ls.hasAssumed = parseLimitLiteral(a.Value.Raw), true
	}
	if a := d.Arguments.ForName("slicingArguments"); a != nil && a.Value != nil {
		for _, c := range a.Value.Children {
			if c.Value != nil && c.Value.Kind == ast.StringValue {
				ls.slicing = append(ls.slicing, c.Value.Raw)
			}
		}
	}
	return ls, true
}

// listSizeLimit returns the size @listSize gives f: its first slicing
// argument present (a literal or a variable), else its assumedSize.
func listSizeLimit(f *ast.Field, ls listSize) limitRef {
	for _, name := range ls.slicing {
		if a := f.Arguments.ForName(name); a != nil && a.Value != nil {
			if r := limitValue(a.Value); r.kind != limitNone {
				return r
			}
		}
	}
	if ls.hasAssumed {
		return limitRef{kind: limitConst, value: ls.assumed}
	}
	return limitRef{}
}
