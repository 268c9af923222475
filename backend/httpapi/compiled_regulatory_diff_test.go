package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// The regulatoryFilings family on the compiled read path, held to gqlgen's executor as the bills family is
// (compiled_diff_test.go).

var (
	regulatoryFieldNames = []string{"id", "document_number", "type", "subtype", "title", "abstract", "action",
		"agency_id", "agency_name", "agencies { agency_id name slug parent_agency_id }", "publication_date",
		"filing_year", "filing_period", "correction_of", "effective_on", "comments_close_on", "rins", "docket_ids",
		"citation", "significant", "html_url", "pdf_url", "source_url", "last_synced_at"}
	agencyFieldNames = []string{"agency_id", "name", "slug", "parent_agency_id"}
)

// TestCompiledRegulatoryFieldSubsets: every single RegulatoryFiling field, every pair, every set but one and all
// of them, then every subset of RegulatoryAgency's fields, on pages of awkward filings under the plain, exact and
// agency-name plans.
func TestCompiledRegulatoryFieldSubsets(t *testing.T) {
	d := newDiffEnv(t)
	var subsets [][]string
	n := len(regulatoryFieldNames)
	for i := range n {
		subsets = append(subsets, []string{regulatoryFieldNames[i]})
		var allBut []string
		for j := range n {
			if j != i {
				allBut = append(allBut, regulatoryFieldNames[j])
			}
			if j > i {
				subsets = append(subsets, []string{regulatoryFieldNames[i], regulatoryFieldNames[j]})
			}
		}
		subsets = append(subsets, allBut)
	}
	subsets = append(subsets, regulatoryFieldNames)
	for _, as := range subsetsOf(agencyFieldNames) {
		if len(as) == 0 {
			as = []string{"__typename"}
		}
		subsets = append(subsets, []string{"id", "agencies { " + strings.Join(as, " ") + " }"})
	}
	inputs := []string{`{limit: 40}`, `{agency_name: "co", limit: 7}`, `{agency_name: "<3>"}`, `{rIN: "2060-av1"}`, `{type: RULE, filing_period: Q2}`}
	for i, s := range subsets {
		body, _ := json.Marshal(map[string]any{"query": `{ regulatoryFilings(input: ` + inputs[i%len(inputs)] + `) { items { ` + strings.Join(s, " ") + ` } nextCursor } }`})
		d.requireSameAnswers(t, body)
	}
	if got := compiledExecutions(t, d.api); got < float64(len(subsets)*2*2) {
		t.Fatalf("only %v compiled executions: the subsets did not take the compiled path", got)
	}
}

// TestCompiledRegulatoryUnscannableIsTheReferences: a page holding a value pgx cannot scan (a NULL array
// element, agencies that are not a list) is answered by the reference executor — its 500, whichever fields are
// selected — and no compiled execution is counted.
func TestCompiledRegulatoryUnscannableIsTheReferences(t *testing.T) {
	d := newDiffEnv(t)
	for _, sel := range []string{"rins", "agencies { name }", "id"} {
		body, _ := json.Marshal(map[string]any{"query": `{ regulatoryFilings(input: {agency_name: "unscannable"}) { items { ` + sel + ` } } }`})
		d.requireSameAnswers(t, body)
	}
	if got := compiledExecutions(t, d.api); got != 0 {
		t.Fatalf("%v compiled executions of pages the full-row read cannot scan", got)
	}
}

// sampleRegulatoryCursors pages once through a few regulatory filters (on the reference server).
func (d *diffEnv) sampleRegulatoryCursors(t testing.TB) []filteredCursor {
	var out []filteredCursor
	for _, f := range []map[string]any{{}, {"agency_name": "co"}, {"agency_name": "<3>"}, {"agency_name": "Co", "type": "RULE"}, {"filing_period": "Q1"}} {
		in := map[string]any{"limit": 2}
		for k, v := range f {
			in[k] = v
		}
		body, _ := json.Marshal(map[string]any{"query": `query($in: RegulatoryFilingsInput) { regulatoryFilings(input: $in) { nextCursor } }`, "variables": map[string]any{"in": in}})
		a := postGraphQL(t, d.ref.URL, body, "")
		var r struct {
			Data struct {
				Page struct{ NextCursor *string } `json:"regulatoryFilings"`
			} `json:"data"`
		}
		if err := json.Unmarshal(a.body, &r); err != nil || r.Data.Page.NextCursor == nil {
			t.Fatalf("no regulatory cursor for %v: %s", f, a.body)
		}
		out = append(out, filteredCursor{filter: f, cursor: *r.Data.Page.NextCursor})
	}
	return out
}

func (g *docGen) regulatorySelection() string {
	var parts []string
	for _, f := range regulatoryFieldNames {
		if g.chance(0.2) {
			name, _, nested := strings.Cut(f, " ")
			sel := g.alias(name) + g.directive()
			if nested {
				var as []string
				for _, a := range agencyFieldNames {
					if g.chance(0.5) {
						as = append(as, g.alias(a)+g.directive())
					}
				}
				if len(as) == 0 || g.chance(0.1) {
					as = append(as, g.pick("__typename", "name"))
				}
				sel += " { " + g.selection("RegulatoryAgency", as) + " }"
			}
			parts = append(parts, sel)
		}
	}
	if g.chance(0.1) || len(parts) == 0 {
		parts = append(parts, g.pick("__typename", "id", "rins", "agencies { name }"))
	}
	g.r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	return g.selection("RegulatoryFiling", parts)
}

func (g *docGen) regulatoryPageSelection() string {
	var parts []string
	if g.chance(0.9) {
		parts = append(parts, g.alias("items")+g.directive()+" { "+g.regulatorySelection()+" }")
	}
	if g.chance(0.6) {
		parts = append(parts, g.alias("nextCursor")+g.directive())
	}
	if g.chance(0.1) || len(parts) == 0 {
		parts = append(parts, "__typename")
	}
	g.r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	return g.selection("RegulatoryFilingsPage", parts)
}

func (g *docGen) regulatoryInput() map[string]any {
	in := map[string]any{}
	if g.chance(0.3) && len(g.regulatoryCursors) > 0 {
		c := g.regulatoryCursors[g.r.IntN(len(g.regulatoryCursors))]
		for k, v := range c.filter {
			in[k] = v
		}
		in["cursor"] = c.cursor
	}
	if g.chance(0.5) {
		in["limit"] = []any{1, 2, 3, 25, 30, 100, 1, 2, 3, 25, 0, 101}[g.r.IntN(12)]
	}
	if g.chance(0.4) { // the slow filter: a few agency names probed, or many walked; a line break or "" plain
		in["agency_name"] = g.pick("co", "CO", "<3>", "agency <1", "second", "\n", "", "%", "_", "zzz", "unscannable")
	}
	if g.chance(0.15) {
		in["type"] = g.pick("RULE", "NOTICE")
	}
	if g.chance(0.1) {
		in["filing_year"] = []any{2020, 2021, 1900}[g.r.IntN(3)]
	}
	if g.chance(0.1) {
		in["filing_period"] = g.pick("Q1", "AMENDMENT")
	}
	if g.chance(0.1) {
		in["rIN"] = g.pick("2060-AV1", "2060-av2", "none")
	}
	if g.chance(0.1) {
		in["docket_id"] = g.pick("EPA-1", "epa-2")
	}
	if g.chance(0.1) {
		in["agency_id"] = g.pick("1", "7", "x")
	}
	if g.chance(0.05) {
		in["cursor"] = g.pick("garbage", "eyJrIjpbIngiXX0", "")
	}
	return in
}

func (g *docGen) regulatoryArgs() string {
	switch k := g.r.IntN(10); {
	case k < 2:
		return ""
	case k < 7:
		in := g.regulatoryInput()
		var vars map[string]any = in
		if g.chance(0.05) { // an enum that does not coerce
			vars = map[string]any{"type": g.pick("rule", "X")}
		}
		return "(input: " + g.newVar(g.pick("RegulatoryFilingsInput", "RegulatoryFilingsInput!"), vars, !g.chance(0.05)) + ")"
	default:
		var fields []string
		for k, v := range g.regulatoryInput() {
			b, _ := json.Marshal(v)
			if k == "type" || k == "filing_period" {
				b = []byte(v.(string)) // an enum literal
			}
			fields = append(fields, k+": "+string(b))
		}
		return "(input: {" + strings.Join(fields, ", ") + "})"
	}
}

func (g *docGen) regulatoryRoot() string {
	return g.alias("regulatoryFilings") + g.regulatoryArgs() + g.directive() + " { " + g.regulatoryPageSelection() + " }"
}
