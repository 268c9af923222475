package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// The federalBudgets family on the compiled read path, held to gqlgen's executor as the bills family is
// (compiled_diff_test.go).

var budgetFieldNames = []string{"id", "dataset", "fiscal_year", "congress", "month", "record_date", "agency_code",
	"agency_name", "bureau_code", "bureau_name", "account_code", "account_title", "subfunction_code",
	"subfunction_title", "bea_category", "on_off_budget", "amount", "fiscal_year_to_date_amount", "source_url",
	"edition", "estimate", "transition_quarter", "last_synced_at"}

// TestCompiledBudgetFieldSubsets: every single FederalBudgetLine field, every pair, every set but one and all
// of them, on pages of awkward lines of both datasets, plain and under the agency filter's two plans.
func TestCompiledBudgetFieldSubsets(t *testing.T) {
	d := newDiffEnv(t)
	var subsets [][]string
	n := len(budgetFieldNames)
	for i := range n {
		subsets = append(subsets, []string{budgetFieldNames[i]})
		var allBut []string
		for j := range n {
			if j != i {
				allBut = append(allBut, budgetFieldNames[j])
			}
			if j > i {
				subsets = append(subsets, []string{budgetFieldNames[i], budgetFieldNames[j]})
			}
		}
		subsets = append(subsets, allBut)
	}
	subsets = append(subsets, budgetFieldNames)
	inputs := []string{`{dataset: APPROPRIATIONS, limit: 30}`, `{dataset: OUTLAYS, limit: 7}`, `{dataset: APPROPRIATIONS, agency: "power"}`}
	for i, s := range subsets {
		sel := strings.Join(s, " ")
		in := inputs[i%len(inputs)]
		body, _ := json.Marshal(map[string]any{"query": `{ federalBudgets(input: ` + in + `) { items { ` + sel + ` } nextCursor } }`})
		d.requireSameAnswers(t, body)
	}
	if got := compiledExecutions(t, d.api); got < float64(len(subsets)*2*2) {
		t.Fatalf("only %v compiled executions: the subsets did not take the compiled path", got)
	}
}

// TestCompiledBudgetNaNIsTheReferences: a page holding a NaN amount, which gqlgen cannot marshal (a server
// fault, 500), is answered by the reference executor when the amount is selected — the same bytes, and no
// compiled execution counted — and by its plan when it is not (gqlgen never marshals it either).
func TestCompiledBudgetNaNIsTheReferences(t *testing.T) {
	d := newDiffEnv(t)
	body, _ := json.Marshal(map[string]any{"query": `{ federalBudgets(input: {dataset: APPROPRIATIONS, agency: "not a number"}) { items { id amount } } }`})
	d.requireSameAnswers(t, body)
	if got := compiledExecutions(t, d.api); got != 0 {
		t.Fatalf("%v compiled executions of a page with a NaN amount", got)
	}
	if a := postGraphQL(t, d.srv.URL, body, ""); a.status != 500 {
		t.Fatalf("the NaN amount was answered %d %s", a.status, a.body)
	}
	idOnly, _ := json.Marshal(map[string]any{"query": `{ federalBudgets(input: {dataset: APPROPRIATIONS, agency: "not a number"}) { items { id } } }`})
	d.requireSameAnswers(t, idOnly)
	if got := compiledExecutions(t, d.api); got != 4 {
		t.Fatalf("%v compiled executions, want the 4 of the page without amounts", got)
	}
}

// sampleBudgetCursors pages once through a few budget filters (on the reference server).
func (d *diffEnv) sampleBudgetCursors(t testing.TB) []filteredCursor {
	var out []filteredCursor
	for _, f := range []map[string]any{{"dataset": "APPROPRIATIONS"}, {"dataset": "OUTLAYS"}, {"dataset": "APPROPRIATIONS", "agency": "dept"},
		{"dataset": "APPROPRIATIONS", "agency": "POWER"}, {"dataset": "OUTLAYS", "fiscal_year": 2016}} {
		in := map[string]any{"limit": 2}
		for k, v := range f {
			in[k] = v
		}
		body, _ := json.Marshal(map[string]any{"query": `query($in: FederalBudgetsInput!) { federalBudgets(input: $in) { nextCursor } }`, "variables": map[string]any{"in": in}})
		a := postGraphQL(t, d.ref.URL, body, "")
		var r struct {
			Data struct {
				Page struct{ NextCursor *string } `json:"federalBudgets"`
			} `json:"data"`
		}
		if err := json.Unmarshal(a.body, &r); err != nil || r.Data.Page.NextCursor == nil {
			t.Fatalf("no budgets cursor for %v: %s", f, a.body)
		}
		out = append(out, filteredCursor{filter: f, cursor: *r.Data.Page.NextCursor})
	}
	return out
}

func (g *docGen) budgetSelection() string {
	var parts []string
	for _, f := range budgetFieldNames {
		if g.chance(0.2) {
			parts = append(parts, g.alias(f)+g.directive())
		}
	}
	if g.chance(0.1) || len(parts) == 0 {
		parts = append(parts, g.pick("__typename", "amount", "id", "estimate"))
	}
	g.r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	return g.selection("FederalBudgetLine", parts)
}

func (g *docGen) budgetsPageSelection() string {
	var parts []string
	if g.chance(0.9) {
		parts = append(parts, g.alias("items")+g.directive()+" { "+g.budgetSelection()+" }")
	}
	if g.chance(0.6) {
		parts = append(parts, g.alias("nextCursor")+g.directive())
	}
	if g.chance(0.1) || len(parts) == 0 {
		parts = append(parts, "__typename")
	}
	g.r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	return g.selection("FederalBudgetsPage", parts)
}

func (g *docGen) budgetsInput() map[string]any {
	in := map[string]any{"dataset": g.pick("APPROPRIATIONS", "OUTLAYS")}
	if g.chance(0.3) && len(g.budgetCursors) > 0 {
		c := g.budgetCursors[g.r.IntN(len(g.budgetCursors))]
		for k, v := range c.filter {
			in[k] = v
		}
		in["cursor"] = c.cursor
	}
	if g.chance(0.5) {
		in["limit"] = []any{1, 2, 3, 25, 30, 100, 1, 2, 3, 25, 0, 101}[g.r.IntN(12)]
	}
	if g.chance(0.35) { // the slow filter: a few agency names probed, or many walked
		in["agency"] = g.pick("power", "DEPT", "dept", "Lines\\", "\n", "", "%", "_", "zzz", "Ünïcödé", "not a")
	}
	if g.chance(0.15) {
		in["fiscal_year"] = []any{2015, 2016, 2020, 1900}[g.r.IntN(4)]
	}
	if g.chance(0.1) {
		in["congress"] = []any{114, 116, 999}[g.r.IntN(3)]
	}
	if g.chance(0.1) {
		in["month"] = g.pick("2016-02", "2016-13", "x") // APPROPRIATIONS: a BAD_USER_INPUT
	}
	if g.chance(0.1) {
		in["bureau_code"] = g.pick("B1", "B2") // OUTLAYS: a BAD_USER_INPUT
	}
	if g.chance(0.1) {
		in["account"] = g.pick("grants", "& s", "<")
	}
	if g.chance(0.1) {
		in["edition"] = []any{2016, 2018}[g.r.IntN(2)]
	}
	if g.chance(0.05) {
		in["cursor"] = g.pick("garbage", "eyJrIjpbIngiXX0", "")
	}
	return in
}

func (g *docGen) budgetsArgs() string {
	switch k := g.r.IntN(10); {
	case k < 5:
		in := g.budgetsInput()
		var vars map[string]any = in
		if g.chance(0.05) { // a dataset that does not coerce
			vars = map[string]any{"dataset": g.pick("BOTH", "outlays")}
		}
		return "(input: " + g.newVar("FederalBudgetsInput!", vars, !g.chance(0.05)) + ")"
	case k < 7:
		lim := []any{2, 5, 101}[g.r.IntN(3)]
		return "(input: {dataset: OUTLAYS, limit: " + g.newVar("Int", lim, g.chance(0.9)) + "})"
	default:
		var fields []string
		for k, v := range g.budgetsInput() {
			b, _ := json.Marshal(v)
			if k == "dataset" {
				b = []byte(v.(string)) // an enum literal
			}
			fields = append(fields, k+": "+string(b))
		}
		return "(input: {" + strings.Join(fields, ", ") + "})"
	}
}

func (g *docGen) budgetsRoot() string {
	return g.alias("federalBudgets") + g.budgetsArgs() + g.directive() + " { " + g.budgetsPageSelection() + " }"
}
