package analysis

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/civicgate/civicgate/internal/rawjson"
)

// The limit walker (docs/design.md D12) measures one operation with its fragments
// expanded. Every fragment is measured once and its result reused wherever it
// is spread, so the work is linear in the document size however often (or
// however deeply) fragments spread each other; a fragment cycle is cut and
// reported instead of followed. Counts saturate instead of overflowing.

// Saturated is where counts and costs stop growing instead of overflowing.
const Saturated = math.MaxInt64 / 4

// SatAdd adds, saturating at Saturated.
func SatAdd(a, b int64) int64 {
	if s := a + b; s < Saturated {
		return s
	}
	return Saturated
}

// SatMul multiplies non-negative counts, saturating at Saturated.
func SatMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a >= Saturated/b {
		return Saturated
	}
	return a * b
}

// Measures are an operation's variable-independent measures, fragments
// expanded (docs/design.md D12); counts saturate at Saturated.
type Measures struct {
	Depth      int64
	Aliases    int64
	RootFields int64
	Directives int64
	// RootNames are the distinct root field names, sorted, introspection
	// fields and __typename excluded.
	RootNames []string
	// Introspection is the first __schema/__type field reached at the root, if any.
	Introspection *ast.Position
	Cost          Cost
}

// limitRef says where a field's limit argument comes from.
type limitRef struct {
	kind    uint8 // limitNone, limitConst, limitVar, limitVarMember
	value   int64
	varName string
	member  string // for limitVarMember: the limit member's name
}

const (
	limitNone = iota
	limitConst
	limitVar       // limit: $n
	limitVarMember // input: $in, limit is a member of $in
)

// costItem is one selection of a costSet: a field, or a fragment (inline or
// spread) whose set merges into the enclosing one.
type costItem struct {
	merge  bool
	list   bool
	object bool
	weight int64 // the field's own cost: 1 for an object, 0 for a leaf, or its @cost
	// argWeight is the @cost of the arguments given, counted once.
	argWeight int64
	limit     limitRef
	set       int32 // child set, -1 for none
}

type costSet struct {
	items  []costItem
	shared bool // a fragment's set: reached from several places, memoised
}

// costPlan holds the cost sets of one document (shared by its operations,
// so every fragment is compiled once).
// A list field costs its limit × (1 per object + its selection's cost);
// a non-list field with a limit argument (a page such as {items, nextCursor})
// hands that limit down to the list fields directly in its selection; a list
// field with no limit of its own or handed down costs defaultSize.
type costPlan struct {
	sets        []costSet
	defaultSize int64
}

// Cost is one operation's cost: a constant, or evaluated per request from
// the coerced variables when a limit comes from a variable (Dynamic).
type Cost struct {
	plan    *costPlan
	root    int32
	dynamic bool
	static  int64
}

// Dynamic reports whether the cost depends on the variables.
func (c Cost) Dynamic() bool { return c.dynamic }

// Static is the cost when it does not depend on the variables.
func (c Cost) Static() int64 { return c.static }

// Evaluate returns the operation cost for the coerced variables vars.
func (c Cost) Evaluate(vars map[string]any) int64 {
	if !c.dynamic {
		return c.static
	}
	return c.plan.cost(c.root, costVars{coerced: vars})
}

// EvaluateRaw returns the operation cost for raw variables that the
// variables step's scalar check admitted, reading the limits from the JSON text.
func (c Cost) EvaluateRaw(raw []byte, defs ast.VariableDefinitionList) int64 {
	if !c.dynamic {
		return c.static
	}
	return c.plan.cost(c.root, costVars{raw: raw, defs: defs, isRaw: true})
}

// costVars is where limits from variables are read: the coerced values, or
// the raw JSON object of scalar variables (with the definitions' defaults).
type costVars struct {
	coerced map[string]any
	raw     []byte
	defs    ast.VariableDefinitionList
	isRaw   bool
}

// setsOnStack: plans this small evaluate without allocating.
const setsOnStack = 32

func (p *costPlan) cost(root int32, vars costVars) int64 {
	var memoBuf [setsOnStack][2]int64
	var doneBuf [setsOnStack]bool
	var (
		memo [][2]int64
		done []bool
	)
	if len(p.sets) <= setsOnStack {
		memo, done = memoBuf[:len(p.sets)], doneBuf[:len(p.sets)]
	} else {
		memo = make([][2]int64, len(p.sets))
		done = make([]bool, len(p.sets))
	}
	a, b := p.eval(root, vars, memo, done)
	return SatAdd(a, SatMul(p.defaultSize, b))
}

// eval returns (A, B): the set's cost is A + size×B where size is the limit
// handed down by the enclosing field (defaultSize when none).
func (p *costPlan) eval(idx int32, vars costVars, memo [][2]int64, done []bool) (int64, int64) {
	if idx < 0 {
		return 0, 0
	}
	if done[idx] {
		return memo[idx][0], memo[idx][1]
	}
	var a, b int64
	for _, it := range p.sets[idx].items {
		ca, cb := p.eval(it.set, vars, memo, done)
		if it.merge {
			a, b = SatAdd(a, ca), SatAdd(b, cb)
			continue
		}
		obj := it.weight
		a = SatAdd(a, it.argWeight)
		l, own := it.limit.resolve(vars)
		switch {
		case it.list && own:
			a = SatAdd(a, SatMul(l, SatAdd(obj, SatAdd(ca, SatMul(p.defaultSize, cb)))))
		case it.list:
			b = SatAdd(b, SatAdd(obj, SatAdd(ca, SatMul(p.defaultSize, cb))))
		case own:
			a = SatAdd(a, SatAdd(obj, SatAdd(ca, SatMul(l, cb))))
		default:
			a = SatAdd(a, SatAdd(obj, SatAdd(ca, SatMul(p.defaultSize, cb))))
		}
	}
	if p.sets[idx].shared {
		memo[idx] = [2]int64{a, b}
		done[idx] = true
	}
	return a, b
}

func (l limitRef) resolve(cv costVars) (int64, bool) {
	if cv.isRaw && l.kind == limitVar {
		return rawLimit(cv.raw, cv.defs, l.varName)
	}
	vars := cv.coerced
	switch l.kind {
	case limitConst:
		return l.value, true
	case limitVar:
		v, ok := vars[l.varName]
		if !ok {
			return 0, false
		}
		return toLimit(v)
	case limitVarMember:
		obj, ok := vars[l.varName].(map[string]any)
		if !ok {
			return 0, false
		}
		v, ok := obj[l.member]
		if !ok {
			return 0, false
		}
		return toLimit(v)
	}
	return 0, false
}

// toLimit converts a coerced variable value to a non-negative limit.
func toLimit(v any) (int64, bool) {
	var n int64
	switch x := v.(type) {
	case nil:
		return 0, false
	case int:
		n = int64(x)
	case int32:
		n = int64(x)
	case int64:
		n = x
	case float64:
		if x >= float64(Saturated) {
			return Saturated, true
		}
		n = int64(x)
	case json.Number:
		i, err := x.Int64()
		if err != nil {
			return Saturated, true
		}
		n = i
	default:
		return 0, false
	}
	if n < 0 {
		n = 0
	}
	return n, true
}

// rawLimit reads an Int variable's value from a raw variables object as
// coercion and toLimit would: absent → the definition's default, null or no
// default → none, negative → 0.
func rawLimit(raw []byte, defs ast.VariableDefinitionList, name string) (int64, bool) {
	v := rawjson.MemberOf(raw, name)
	if v == nil {
		def := defs.ForName(name)
		if def == nil || def.DefaultValue == nil || def.DefaultValue.Kind != ast.IntValue {
			return 0, false
		}
		return parseLimitLiteral(def.DefaultValue.Raw), true
	}
	if len(v) == 4 && string(v) == "null" {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return Saturated, true
	}
	return max(n, 0), true
}

func parseLimitLiteral(raw string) int64 {
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return Saturated // out-of-range literal: treat as huge
	}
	if n < 0 {
		return 0
	}
	if n > Saturated {
		return Saturated
	}
	return n
}
