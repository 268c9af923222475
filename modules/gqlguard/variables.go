package gqlguard

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/validator"

	"github.com/civicgate/civicgate/internal/intscalar"
	"github.com/civicgate/civicgate/modules/gqlguard/internal/rawjson"
	"github.com/civicgate/civicgate/modules/gqlguard/request"
)

// coerceVariables coerces req's variables for op and evaluates its cost,
// refusing variables that do not coerce (400); it returns the result, or
// the refusal's outcome.
func (g *Guard) coerceVariables(w http.ResponseWriter, op *compiledOp, req *request.Located) (coerced, string) {
	raw, vars, decoded := req.Variables()
	co, err := g.coerce(op, req.Fast(), raw, vars, decoded)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, messageBody(variableMessage(err)))
		return coerced{}, outcomeBadRequest
	}
	return co, ""
}

// coerce coerces the request's variables for op and evaluates its cost. On
// the fast path the result is remembered per raw variables text (coercion
// and cost are pure functions of the operation and that text).
func (g *Guard) coerce(op *compiledOp, fast bool, raw []byte, vars map[string]any, haveVars bool) (coerced, error) {
	if fast {
		if !op.varsNeedCoercion && scalarVariablesValid(g.schema.schema, op.vars.VariableDefinitions, raw) {
			if !op.measures.Cost.Dynamic() {
				return op.static, nil
			}
			cost := op.measures.Cost.EvaluateRaw(raw, op.vars.VariableDefinitions)
			return coerced{cost: cost, costVal: strconv.FormatInt(cost, 10)}, nil
		}
		if c, ok := op.memo.get(raw); ok {
			return c, nil
		}
	}
	if !haveVars {
		var err error
		if vars, err = rawjson.DecodeObject(raw); err != nil {
			return coerced{}, err
		}
	}
	coercedVars, err := validator.VariableValues(g.schema.schema, op.vars, vars)
	if err != nil {
		return coerced{}, err
	}
	if err := intscalar.Variables(g.schema.schema, op.vars.VariableDefinitions, coercedVars); err != nil {
		return coerced{}, err
	}
	cost := op.measures.Cost.Evaluate(coercedVars)
	c := coerced{cost: cost, costVal: strconv.FormatInt(cost, 10)}
	if fast {
		op.memo.put(raw, c)
	}
	return c, nil
}

// variableMessage phrases a coercion error: `Variable "$n" …: <reason>`.
func variableMessage(err error) string {
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
