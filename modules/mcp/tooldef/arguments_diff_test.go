package tooldef

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// The argument checker and jsonschema-go, validating the published input
// schema, accept and refuse exactly the same arguments: thousands of
// generated argument objects, mostly valid, each with a chance of one of the
// mistakes a caller makes (wrong type, null, fraction, out of range, unknown
// member, missing required member).
func TestArgumentCheckerAgreesWithJSONSchema(t *testing.T) {
	find, add := libraryTools(t)
	records := recordsTools(t).Tools()
	tools := append([]*Tool{find, add}, records...)
	rng := rand.New(rand.NewPCG(1, 2))
	accepted, refused := 0, 0
	for _, tool := range tools {
		resolved, err := tool.InputSchema.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		for range 1500 {
			g := argGen{rng: rng, mistakes: rng.IntN(4) == 0}
			args := g.object(tool.vars, 0)
			raw, err := json.Marshal(args)
			if err != nil {
				t.Fatal(err)
			}
			_, mine := tool.Variables(raw)
			var instance any
			if err := json.Unmarshal(raw, &instance); err != nil {
				t.Fatal(err)
			}
			theirs := resolved.Validate(instance)
			if (mine == nil) != (theirs == nil) {
				t.Fatalf("%s %s:\nchecker: %v\njsonschema-go: %v", tool.Name, raw, mine, theirs)
			}
			if mine == nil {
				accepted++
			} else {
				refused++
			}
		}
	}
	if accepted < 3000 || refused < 1000 {
		t.Errorf("%d accepted, %d refused: the generator does not exercise both sides", accepted, refused)
	}
}

// argGen generates argument values for checker types.
type argGen struct {
	rng      *rand.Rand
	mistakes bool
}

func (g *argGen) mistake() bool { return g.mistakes && g.rng.IntN(8) == 0 }

func (g *argGen) object(fields []inputField, depth int) map[string]any {
	obj := map[string]any{}
	for _, f := range fields {
		if !f.required && g.rng.IntN(2) == 0 {
			continue
		}
		if f.required && g.mistake() {
			continue // a required member left out
		}
		obj[f.name] = g.value(f.typ, depth+1)
	}
	if g.mistake() {
		obj["notAField"] = 1
	}
	return obj
}

func (g *argGen) value(t *argType, depth int) any {
	if !t.nonNull && g.rng.IntN(6) == 0 {
		return nil
	}
	if g.mistake() {
		return g.wrong(t)
	}
	switch t.kind {
	case kindInt:
		switch g.rng.IntN(4) {
		case 0:
			return float64(maxInt)
		case 1:
			return float64(minInt)
		}
		return float64(g.rng.IntN(200) - 100)
	case kindFloat:
		return g.rng.NormFloat64() * 1e6
	case kindString:
		return []string{"", "hr2882-118", "query { x }", "ü"}[g.rng.IntN(4)]
	case kindBoolean:
		return g.rng.IntN(2) == 0
	case kindEnum:
		return t.values[g.rng.IntN(len(t.values))]
	case kindList:
		n := g.rng.IntN(3)
		if depth > 4 {
			n = 0
		}
		list := make([]any, n)
		for i := range list {
			list[i] = g.value(t.elem, depth+1)
		}
		return list
	case kindObject:
		if depth > 4 {
			// Deep enough: only what is required.
			obj := map[string]any{}
			for _, f := range t.object.fields {
				if f.required {
					obj[f.name] = g.value(f.typ, depth+1)
				}
			}
			return obj
		}
		return g.object(t.object.fields, depth)
	}
	return []any{"any", 1, map[string]any{"json": true}}[g.rng.IntN(3)] // custom scalar
}

// wrong is a value of another kind than t (or, for t's kind, out of range).
func (g *argGen) wrong(t *argType) any {
	switch g.rng.IntN(4) {
	case 0:
		return nil
	case 1:
		if t.kind == kindInt {
			return []any{1.5, float64(maxInt) + 1, float64(minInt) - 1}[g.rng.IntN(3)]
		}
		return "a string"
	case 2:
		if t.kind == kindEnum {
			return "NOT_A_VALUE"
		}
		return map[string]any{"x": 1}
	}
	return []any{true}
}
