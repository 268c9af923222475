package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// The lobbyingDisclosures family on the compiled read path, held to gqlgen's executor as the bills family is
// (compiled_diff_test.go).

var (
	lobbyingFieldNames = []string{"id", "filing_type", "filing_type_display", "filing_year", "filing_period",
		"registrant_id", "registrant_name", "client_id", "client_name", "client_description", "income", "expenses",
		"posted_at", "termination_date", "issue_areas", "lobbyist_names", "agencies_acted_on",
		"activities { issue_area issue_area_name description agencies_acted_on lobbyists { lobbyist_id name covered_position is_new } }",
		"document_url", "source_url", "last_synced_at"}
	activityFieldNames = []string{"issue_area", "issue_area_name", "description", "agencies_acted_on", "lobbyists { name is_new }"}
	lobbyistFieldNames = []string{"lobbyist_id", "name", "covered_position", "is_new"}
)

// TestCompiledLobbyingFieldSubsets: every single LobbyingDisclosure field, every pair, every set but one and all
// of them, then every subset of LobbyingActivity's and Lobbyist's fields, on pages of awkward disclosures, plain
// and under agency_acted_on's plan.
func TestCompiledLobbyingFieldSubsets(t *testing.T) {
	d := newDiffEnv(t)
	var subsets [][]string
	n := len(lobbyingFieldNames)
	for i := range n {
		subsets = append(subsets, []string{lobbyingFieldNames[i]})
		var allBut []string
		for j := range n {
			if j != i {
				allBut = append(allBut, lobbyingFieldNames[j])
			}
			if j > i {
				subsets = append(subsets, []string{lobbyingFieldNames[i], lobbyingFieldNames[j]})
			}
		}
		subsets = append(subsets, allBut)
	}
	subsets = append(subsets, lobbyingFieldNames)
	for _, as := range subsetsOf(activityFieldNames) {
		if len(as) == 0 {
			as = []string{"__typename"}
		}
		subsets = append(subsets, []string{"id", "activities { " + strings.Join(as, " ") + " }"})
	}
	for _, ls := range subsetsOf(lobbyistFieldNames) {
		if len(ls) == 0 {
			ls = []string{"__typename"}
		}
		subsets = append(subsets, []string{"activities { lobbyists { " + strings.Join(ls, " ") + " } }"})
	}
	inputs := []string{`{limit: 40}`, `{agency_acted_on: "AGENCY 1", limit: 7}`, `{agency_acted_on: "second & <1>"}`, `{issue_area: "hcr", filing_period: Q2}`, `{lobbyist_name: "lob"}`}
	for i, s := range subsets {
		body, _ := json.Marshal(map[string]any{"query": `{ lobbyingDisclosures(input: ` + inputs[i%len(inputs)] + `) { items { ` + strings.Join(s, " ") + ` } nextCursor } }`})
		d.requireSameAnswers(t, body)
	}
	if got := compiledExecutions(t, d.api); got < float64(len(subsets)*2*2) {
		t.Fatalf("only %v compiled executions: the subsets did not take the compiled path", got)
	}
}

// TestCompiledLobbyingUnscannableIsTheReferences: a page holding a value pgx cannot scan (a NULL array element,
// activities that are not a list) is answered by the reference executor — its 500, whichever fields are
// selected — and no compiled execution is counted.
func TestCompiledLobbyingUnscannableIsTheReferences(t *testing.T) {
	d := newDiffEnv(t)
	for _, sel := range []string{"issue_areas", "activities { issue_area }", "id"} {
		body, _ := json.Marshal(map[string]any{"query": `{ lobbyingDisclosures(input: {agency_acted_on: "unscannable office"}) { items { ` + sel + ` } } }`})
		d.requireSameAnswers(t, body)
	}
	if got := compiledExecutions(t, d.api); got != 0 {
		t.Fatalf("%v compiled executions of pages the full-row read cannot scan", got)
	}
}

// sampleLobbyingCursors pages once through a few lobbying filters (on the reference server).
func (d *diffEnv) sampleLobbyingCursors(t testing.TB) []filteredCursor {
	var out []filteredCursor
	for _, f := range []map[string]any{{}, {"agency_acted_on": "agency 1"}, {"agency_acted_on": "Second & <0>", "filing_year": 2021}, {"issue_area": "HCR"}} {
		in := map[string]any{"limit": 2}
		for k, v := range f {
			in[k] = v
		}
		body, _ := json.Marshal(map[string]any{"query": `query($in: LobbyingDisclosuresInput) { lobbyingDisclosures(input: $in) { nextCursor } }`, "variables": map[string]any{"in": in}})
		a := postGraphQL(t, d.ref.URL, body, "")
		var r struct {
			Data struct {
				Page struct{ NextCursor *string } `json:"lobbyingDisclosures"`
			} `json:"data"`
		}
		if err := json.Unmarshal(a.body, &r); err != nil || r.Data.Page.NextCursor == nil {
			t.Fatalf("no lobbying cursor for %v: %s", f, a.body)
		}
		out = append(out, filteredCursor{filter: f, cursor: *r.Data.Page.NextCursor})
	}
	return out
}

// nestedSelection picks some of fields (a field with a sub-selection is picked whole, its sub-selection cut
// down the same way), aliased and under directives and fragments of typeName.
func (g *docGen) nestedSelection(typeName string, fields []string, p float64, nested map[string][2]any) string {
	var parts []string
	for _, f := range fields {
		if !g.chance(p) {
			continue
		}
		name, _, hasSub := strings.Cut(f, " ")
		sel := g.alias(name) + g.directive()
		if hasSub {
			sub := nested[name]
			sel += " { " + g.nestedSelection(sub[0].(string), sub[1].([]string), 0.5, nested) + " }"
		}
		parts = append(parts, sel)
	}
	if len(parts) == 0 || g.chance(0.1) {
		parts = append(parts, g.pick("__typename", strings.SplitN(fields[0], " ", 2)[0]))
	}
	g.r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	return g.selection(typeName, parts)
}

var lobbyingNested = map[string][2]any{
	"activities": {"LobbyingActivity", activityFieldNames},
	"lobbyists":  {"Lobbyist", lobbyistFieldNames},
}

func (g *docGen) lobbyingPageSelection() string {
	var parts []string
	if g.chance(0.9) {
		parts = append(parts, g.alias("items")+g.directive()+" { "+g.nestedSelection("LobbyingDisclosure", lobbyingFieldNames, 0.2, lobbyingNested)+" }")
	}
	if g.chance(0.6) {
		parts = append(parts, g.alias("nextCursor")+g.directive())
	}
	if g.chance(0.1) || len(parts) == 0 {
		parts = append(parts, "__typename")
	}
	g.r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	return g.selection("LobbyingDisclosuresPage", parts)
}

func (g *docGen) lobbyingInput() map[string]any {
	in := map[string]any{}
	if g.chance(0.3) && len(g.lobbyingCursors) > 0 {
		c := g.lobbyingCursors[g.r.IntN(len(g.lobbyingCursors))]
		for k, v := range c.filter {
			in[k] = v
		}
		in["cursor"] = c.cursor
	}
	if g.chance(0.5) {
		in["limit"] = []any{1, 2, 3, 25, 30, 100, 1, 2, 3, 25, 0, 101}[g.r.IntN(12)]
	}
	if g.chance(0.4) { // the slow filter: one range of the agency rows
		in["agency_acted_on"] = g.pick("agency 1", "AGENCY 2", "second & <0>", "Second & <1>", "agency", "", "unscannable office")
	}
	if g.chance(0.1) {
		in["filing_year"] = []any{2020, 2021, 1900}[g.r.IntN(3)]
	}
	if g.chance(0.1) {
		in["filing_period"] = g.pick("Q1", "AMENDMENT")
	}
	if g.chance(0.1) {
		in["issue_area"] = g.pick("hcr", "T<X>1")
	}
	if g.chance(0.1) {
		in["registrant_name"] = g.pick("reg", "%", "\\")
	}
	if g.chance(0.1) {
		in["client_id"] = g.pick("C1", "C9")
	}
	if g.chance(0.1) {
		in["lobbyist_name"] = g.pick("lob \"1", "zz")
	}
	if g.chance(0.05) {
		in["cursor"] = g.pick("garbage", "eyJrIjpbIngiXX0", "")
	}
	return in
}

func (g *docGen) lobbyingArgs() string {
	switch k := g.r.IntN(10); {
	case k < 2:
		return ""
	case k < 7:
		in := g.lobbyingInput()
		var vars map[string]any = in
		if g.chance(0.05) { // an enum that does not coerce
			vars = map[string]any{"filing_period": g.pick("q1", "X")}
		}
		return "(input: " + g.newVar(g.pick("LobbyingDisclosuresInput", "LobbyingDisclosuresInput!"), vars, !g.chance(0.05)) + ")"
	default:
		var fields []string
		for k, v := range g.lobbyingInput() {
			b, _ := json.Marshal(v)
			if k == "filing_period" {
				b = []byte(v.(string)) // an enum literal
			}
			fields = append(fields, k+": "+string(b))
		}
		return "(input: {" + strings.Join(fields, ", ") + "})"
	}
}

func (g *docGen) lobbyingRoot() string {
	return g.alias("lobbyingDisclosures") + g.lobbyingArgs() + g.directive() + " { " + g.lobbyingPageSelection() + " }"
}
