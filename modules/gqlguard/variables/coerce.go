package variables

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/validator"

	"github.com/civicgate/civicgate/internal/intscalar"
	"github.com/civicgate/civicgate/internal/rawjson"
	"github.com/civicgate/civicgate/modules/gqlguard/analysis"
)

// Coerced is what variable coercion yields that a request needs: the cost.
type Coerced struct {
	Cost int64
	// CostValue is strconv.FormatInt(Cost), boxed once for the replacer
	// ({graphql.cost}).
	CostValue any
}

// varMemo remembers the coercion result of raw variables texts (successes
// only), bounded in entries and text length.
type varMemo struct {
	mu sync.Mutex
	m  map[string]Coerced
}

const (
	memoEntries = 64
	memoMaxText = 2 << 10
)

func (v *varMemo) get(raw []byte) (Coerced, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	c, ok := v.m[string(raw)]
	return c, ok
}

func (v *varMemo) put(raw []byte, c Coerced) {
	if len(raw) > memoMaxText {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = make(map[string]Coerced)
	}
	if len(v.m) >= memoEntries {
		clear(v.m)
	}
	v.m[string(raw)] = c
}

// Operation is what coercing one operation's variables needs, prepared
// once per compiled document: the variable definitions, the cost to
// evaluate against the coerced values, and the results remembered.
type Operation struct {
	schema *ast.Schema
	// defs carries only the variable definitions, enough for
	// validator.VariableValues without pinning the whole document.
	defs *ast.OperationDefinition
	cost analysis.Cost
	// static is the result when the cost does not depend on the variables.
	static Coerced
	// needsCoercion: a variable's type is not a built-in scalar or enum.
	needsCoercion bool
	memo          varMemo
}

// NewOperation prepares the coercion of op's variables against schema;
// cost is op's cost (analysis.Walker.Measure).
func NewOperation(schema *ast.Schema, op *ast.OperationDefinition, cost analysis.Cost) *Operation {
	static := cost.Static()
	return &Operation{
		schema:        schema,
		defs:          &ast.OperationDefinition{Operation: op.Operation, Name: op.Name, VariableDefinitions: op.VariableDefinitions},
		cost:          cost,
		static:        Coerced{Cost: static, CostValue: strconv.FormatInt(static, 10)},
		needsCoercion: !scalarVariableTypes(schema, op.VariableDefinitions),
	}
}

// Coerce coerces a request's variables and evaluates the operation's cost.
// raw is the variables object as sent when the request was located in place
// (fast); vars the decoded variables when decoded says they were decoded.
// On the fast path the result is remembered per raw variables text
// (coercion and cost are pure functions of the operation and that text).
// An error is phrased for the client by Message.
func (o *Operation) Coerce(fast bool, raw []byte, vars map[string]any, decoded bool) (Coerced, error) {
	if fast {
		if !o.needsCoercion && scalarVariablesValid(o.schema, o.defs.VariableDefinitions, raw) {
			if !o.cost.Dynamic() {
				return o.static, nil
			}
			cost := o.cost.EvaluateRaw(raw, o.defs.VariableDefinitions)
			return Coerced{Cost: cost, CostValue: strconv.FormatInt(cost, 10)}, nil
		}
		if c, ok := o.memo.get(raw); ok {
			return c, nil
		}
	}
	if !decoded {
		var err error
		if vars, err = rawjson.DecodeObject(raw); err != nil {
			return Coerced{}, err
		}
	}
	coercedVars, err := validator.VariableValues(o.schema, o.defs, vars)
	if err != nil {
		return Coerced{}, err
	}
	if err := intscalar.Variables(o.schema, o.defs.VariableDefinitions, coercedVars); err != nil {
		return Coerced{}, err
	}
	cost := o.cost.Evaluate(coercedVars)
	c := Coerced{Cost: cost, CostValue: strconv.FormatInt(cost, 10)}
	if fast {
		o.memo.put(raw, c)
	}
	return c, nil
}

// Message phrases a coercion error: `Variable "$n" …: <reason>`.
func Message(err error) string {
	var ge *gqlerror.Error
	if !errors.As(err, &ge) {
		return "Variables are invalid"
	}
	name, at := "", ""
	if len(ge.Path) > 1 {
		name = fmt.Sprint(ge.Path[1])
		at = ge.Path.String()
	}
	if name == "" {
		return "Variables are invalid: " + ge.Message
	}
	return fmt.Sprintf("Variable \"$%s\" is invalid at %s: %s", name, at, ge.Message)
}

// scalarVariableTypes reports whether every variable is a built-in scalar or
// an enum (not a list, input object or custom scalar).
func scalarVariableTypes(schema *ast.Schema, defs ast.VariableDefinitionList) bool {
	for _, d := range defs {
		if d.Type.Elem != nil {
			return false
		}
		switch d.Type.NamedType {
		case "Int", "Float", "String", "ID", "Boolean":
			continue
		}
		if t := schema.Types[d.Type.NamedType]; t == nil || t.Kind != ast.Enum {
			return false
		}
	}
	return true
}
