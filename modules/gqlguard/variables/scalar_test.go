package variables

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/civicgate/civicgate/internal/rawjson"
	"github.com/civicgate/civicgate/modules/gqlguard/analysis"
)

// prepare validates query against the guard's test schema and prepares its
// first operation as the document step does.
func prepare(t *testing.T, query string) (*ast.Schema, *Operation) {
	t.Helper()
	const path = "../testdata/records.graphqls"
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := gqlparser.LoadSchema(&ast.Source{Name: path, Input: string(src)})
	if err != nil {
		t.Fatal(err)
	}
	doc, errs := gqlparser.LoadQueryWithRules(schema, query, rules.NewDefaultRules())
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	op := doc.Operations[0]
	m := analysis.NewWalker(doc, schema, "limit", 25).Measure(op)
	return schema, NewOperation(schema, op, m.Cost)
}

// TestScalarVariablesAgreeWithCoercion: the fast check never admits
// variables that coercion refuses (and admits the usual ones), over
// generated variables objects for a document of scalar and enum variables.
func TestScalarVariablesAgreeWithCoercion(t *testing.T) {
	schema, op := prepare(t, `query Q($c: Int, $n: Int!, $m: Int = 7, $s: String, $id: ID!, $b: Boolean!, $p: RegulatoryFilingPeriod, $d: FederalBudgetDataset! = OUTLAYS) {
  bills(input: {congress: $c, q: $s, limit: $n}) { nextCursor }
  bill(id: $id) { id }
  regulatoryFilings(input: {filing_period: $p}) { nextCursor }
  federalBudgets(input: {dataset: $d}) { nextCursor }
  members(input: {state: $s, limit: $m}) @include(if: $b) { nextCursor }
}`)
	if op.needsCoercion || !op.cost.Dynamic() {
		t.Fatalf("want scalar variables and a cost that depends on them (needs coercion %v, dynamic %v)", op.needsCoercion, op.cost.Dynamic())
	}
	values := map[string][]string{
		"c":  {`118`, `-1`, `2147483647`, `2147483648`, `1.5`, `1e3`, `"118"`, `null`, `true`, `[1]`, `{}`},
		"n":  {`10`, `null`, `0`, `-2147483648`, `-2147483649`, `"10"`, `-5`, `99`},
		"m":  {`3`, `null`, `-1`, `2147483647`},
		"s":  {`"x"`, `"a\"b"`, `null`, `1`, `false`, `["x"]`},
		"id": {`"abc"`, `42`, `4.2`, `null`, `true`},
		"b":  {`true`, `false`, `null`, `"true"`, `0`},
		"p":  {`"Q1"`, `"AMENDMENT"`, `"Q5"`, `"q1"`, `null`, `1`, `"Q\u0031"`},
		"d":  {`"APPROPRIATIONS"`, `null`, `"NOPE"`},
		"zz": {`1`},
	}
	names := []string{"c", "n", "m", "s", "id", "b", "p", "d", "zz"}
	rng := rand.New(rand.NewPCG(17, 23))
	fastAdmitted := 0
	for i := 0; i < 4000; i++ {
		var members []string
		for _, name := range names {
			if rng.IntN(6) == 0 {
				continue
			}
			vals := values[name]
			v := vals[0] // the first value of each list is valid; mostly pick it
			if rng.IntN(3) == 0 {
				v = vals[rng.IntN(len(vals))]
			}
			if name == "zz" && rng.IntN(4) != 0 {
				continue // an unknown variable: rare
			}
			members = append(members, fmt.Sprintf("%q:%s", name, v))
			if rng.IntN(40) == 0 { // a repeated key
				members = append(members, fmt.Sprintf("%q:%s", name, vals[rng.IntN(len(vals))]))
			}
		}
		raw := []byte("{" + strings.Join(members, ",") + "}")
		fast := scalarVariablesValid(schema, op.defs.VariableDefinitions, raw)
		vars, err := rawjson.DecodeObject(raw)
		if err != nil {
			t.Fatal(err)
		}
		slow, slowErr := op.Coerce(false, nil, vars, true)
		if fast && slowErr != nil {
			t.Fatalf("fast check admitted %s, coercion refuses: %v", raw, slowErr)
		}
		if fast {
			fastAdmitted++
			if got := op.cost.EvaluateRaw(raw, op.defs.VariableDefinitions); got != slow.Cost {
				t.Fatalf("%s: cost from the raw variables %d, from coercion %d", raw, got, slow.Cost)
			}
		}
	}
	if fastAdmitted < 50 {
		t.Fatalf("the fast check admitted only %d of 4000 (it should admit the usual objects)", fastAdmitted)
	}
	for _, raw := range []string{`{"n":5,"id":7,"b":false}`, `{"n":5,"c":118,"s":"x","id":"a","b":true,"p":"Q2","d":"OUTLAYS"}`} {
		if !scalarVariablesValid(schema, op.defs.VariableDefinitions, []byte(raw)) {
			t.Errorf("usual variables %s not admitted by the fast check", raw)
		}
	}
}
