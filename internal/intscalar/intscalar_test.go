package intscalar_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/civicgate/civicgate/internal/intscalar"
)

const sdl = `
type Query { f(n: Int, l: [Int], in: In, s: String): Int }
input In { n: Int, list: [Int!], nested: In, s: String }
`

func schema(t *testing.T) *ast.Schema {
	t.Helper()
	s, err := gqlparser.LoadSchema(&ast.Source{Name: "t.graphqls", Input: sdl})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRuleRefusesLiteralsBeyond32Bits(t *testing.T) {
	s := schema(t)
	r := rules.NewDefaultRules()
	r.AddRule(intscalar.RuleName, intscalar.Rule.RuleFunc)
	for _, tc := range []struct {
		doc  string
		want string // "" = valid
	}{
		{`{ f(n: 2147483647) }`, ""},
		{`{ f(n: -2147483648) }`, ""},
		{`{ f(n: 2147483648) }`, "2147483648"},
		{`{ f(n: -2147483649) }`, "-2147483649"},
		{`{ f(l: [1, 2170000000]) }`, "2170000000"},
		{`{ f(in: {nested: {list: [3, 99999999999]}}) }`, "99999999999"},
		{`query($n: Int = 5000000000) { f(n: $n) }`, "5000000000"},
		{`{ f(s: "9999999999") }`, ""}, // a String, not an Int
	} {
		doc, perr := parser.ParseQuery(&ast.Source{Input: tc.doc})
		if perr != nil {
			t.Fatalf("%s: %v", tc.doc, perr)
		}
		errs := validator.ValidateWithRules(s, doc, r)
		switch {
		case tc.want == "" && len(errs) != 0:
			t.Errorf("%s: refused: %v", tc.doc, errs)
		case tc.want != "" && (len(errs) != 1 || errs[0].Message != "Int cannot represent non 32-bit signed integer value: "+tc.want || errs[0].Rule != intscalar.RuleName):
			t.Errorf("%s: errors %v", tc.doc, errs)
		}
	}
}

func TestVariables(t *testing.T) {
	s := schema(t)
	doc, perr := parser.ParseQuery(&ast.Source{Input: `query($n: Int, $l: [Int], $in: In) { f(n: $n, l: $l, in: $in) }`})
	if perr != nil {
		t.Fatal(perr)
	}
	if errs := validator.ValidateWithRules(s, doc, nil); len(errs) != 0 {
		t.Fatal(errs)
	}
	op := doc.Operations[0]
	for _, tc := range []struct {
		vars     string
		wantPath string // "" = accepted
	}{
		{`{"n": 2147483647, "l": [1, -2147483648], "in": {"n": 7, "list": [1]}}`, ""},
		{`{"n": 2170000000}`, "variable.n"},
		{`{"n": -2147483649}`, "variable.n"},
		{`{"l": [1, 2, 4294967296]}`, "variable.l[2]"},
		{`{"l": 4294967296}`, "variable.l[0]"}, // gqlparser makes it a list of one
		{`{"in": {"nested": {"list": [1, 3000000000]}}}`, "variable.in.nested.list[1]"},
		{`{"in": {"s": "3000000000"}}`, ""},
	} {
		// As the guard and gqlgen decode them: numbers as json.Number.
		dec := json.NewDecoder(strings.NewReader(tc.vars))
		dec.UseNumber()
		var raw map[string]any
		if err := dec.Decode(&raw); err != nil {
			t.Fatal(err)
		}
		coerced, cerr := validator.VariableValues(s, op, raw)
		if cerr != nil {
			t.Fatalf("%s: gqlparser refused it already: %v", tc.vars, cerr)
		}
		err := intscalar.Variables(s, op.VariableDefinitions, coerced)
		switch {
		case tc.wantPath == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.vars, err)
		case tc.wantPath != "" && (err == nil || err.Path.String() != tc.wantPath ||
			!strings.HasPrefix(err.Message, "Int cannot represent non 32-bit signed integer value: ")):
			t.Errorf("%s: %v (path %v), want path %s", tc.vars, err, pathOf(err), tc.wantPath)
		}
		// The same values decoded without UseNumber (float64) are judged alike.
		var floats map[string]any
		_ = json.Unmarshal([]byte(tc.vars), &floats)
		if coerced, cerr := validator.VariableValues(s, op, floats); cerr == nil {
			if err2 := intscalar.Variables(s, op.VariableDefinitions, coerced); (err2 == nil) != (err == nil) {
				t.Errorf("%s as float64: %v, as json.Number: %v", tc.vars, err2, err)
			}
		}
	}
}

func pathOf(err interface{ Error() string }) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
