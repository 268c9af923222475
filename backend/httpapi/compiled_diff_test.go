package httpapi_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// The differential tests hold the compiled read path (backend/readplan) to gqlgen's executor: every generated
// request must get the same status, headers and body bytes from both (docs/design.md D51).

var billFieldNames = []string{"id", "congress", "type", "number", "officialTitle", "introducedDate", "memberName",
	"memberBioguideId", "memberByCongressKey", "committeeNames", "sourceUrl", "lastSyncedAt"}

// TestCompiledBillFieldSubsets: every single Bill field, every pair, every set but one and all of them, on a
// page of awkward bills, under bills and bill.
func TestCompiledBillFieldSubsets(t *testing.T) {
	d := newDiffEnv(t)
	var subsets [][]string
	n := len(billFieldNames)
	for i := range n {
		subsets = append(subsets, []string{billFieldNames[i]})
		var allBut []string
		for j := range n {
			if j != i {
				allBut = append(allBut, billFieldNames[j])
			}
			if j > i {
				subsets = append(subsets, []string{billFieldNames[i], billFieldNames[j]})
			}
		}
		subsets = append(subsets, allBut)
	}
	subsets = append(subsets, billFieldNames)
	for _, s := range subsets {
		sel := strings.Join(s, " ")
		for _, q := range []string{
			`{ bills(input: {limit: 30, congress: 116}) { items { ` + sel + ` } nextCursor } }`,
			`{ bill(id: "hr1005-116") { ` + sel + ` } }`,
		} {
			body, _ := json.Marshal(map[string]any{"query": q})
			d.requireSameAnswers(t, body)
		}
	}
	if n := compiledExecutions(t, d.api); n < float64(len(subsets)*2*2*2) {
		t.Fatalf("only %v compiled executions: the subsets did not take the compiled path", n)
	}
}

// TestCompiledMatchesReference runs generated documents — field subsets, aliases, fragments, @skip/@include on
// variables, several root fields, filters, cursors good and bad, limits out of range, unknown bills, other
// families (the fallback) — through both executors.
func TestCompiledMatchesReference(t *testing.T) {
	d := newDiffEnv(t)
	cursors := d.sampleCursors(t)
	g := &docGen{r: rand.New(rand.NewPCG(51, 1)), cursors: cursors, memberCursors: d.sampleMemberCursors(t),
		budgetCursors: d.sampleBudgetCursors(t), regulatoryCursors: d.sampleRegulatoryCursors(t),
		lobbyingCursors: d.sampleLobbyingCursors(t)}
	before := compiledExecutions(t, d.api)
	for i := range 400 {
		body := g.request()
		t.Run(fmt.Sprint(i), func(t *testing.T) { d.requireSameAnswers(t, body) })
		if t.Failed() {
			break
		}
	}
	if n := compiledExecutions(t, d.api) - before; n < 400 {
		t.Fatalf("only %v compiled executions of 400 documents × 4 requests: the generator misses the compiled path", n)
	}
}

// filteredCursor is a cursor with the filters it is bound to.
type filteredCursor struct {
	filter map[string]any
	cursor string
}

// sampleCursors pages once through a few filters (on the reference server) for cursors the generator reuses.
func (d *diffEnv) sampleCursors(t testing.TB) []filteredCursor {
	var out []filteredCursor
	for _, f := range []map[string]any{{}, {"congress": 116}, {"type": "hr"}, {"q": "water"}, {"congress": 118, "type": "HR"}} {
		in := map[string]any{"limit": 2}
		for k, v := range f {
			in[k] = v
		}
		body, _ := json.Marshal(map[string]any{"query": `query($in: BillsInput) { bills(input: $in) { nextCursor } }`, "variables": map[string]any{"in": in}})
		a := postGraphQL(t, d.ref.URL, body, "")
		var r struct {
			Data struct {
				Bills struct{ NextCursor *string } `json:"bills"`
			} `json:"data"`
		}
		if err := json.Unmarshal(a.body, &r); err != nil || r.Data.Bills.NextCursor == nil {
			t.Fatalf("no cursor for %v: %s", f, a.body)
		}
		out = append(out, filteredCursor{filter: f, cursor: *r.Data.Bills.NextCursor})
	}
	return out
}

// docGen writes random GraphQL requests over the five families (and now and then another family).
type docGen struct {
	r                 *rand.Rand
	cursors           []filteredCursor // bills
	memberCursors     []filteredCursor
	budgetCursors     []filteredCursor
	regulatoryCursors []filteredCursor
	lobbyingCursors   []filteredCursor

	// per document
	varDefs   []string
	vars      map[string]any
	fragments []string
	nVar      int
}

func (g *docGen) chance(p float64) bool { return g.r.Float64() < p }

func (g *docGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

// request is one POST body.
func (g *docGen) request() []byte {
	g.varDefs, g.vars, g.fragments, g.nVar = nil, map[string]any{}, nil, 0
	var roots []string
	roots = append(roots, g.root())
	for g.chance(0.25) && len(roots) < 4 {
		roots = append(roots, g.root())
	}
	q := "query"
	if g.chance(0.3) {
		q += " Named"
	}
	if len(g.varDefs) > 0 {
		q += "(" + strings.Join(g.varDefs, ", ") + ")"
	}
	q += " { " + strings.Join(roots, " ") + " }"
	for _, f := range g.fragments {
		q += " " + f
	}
	req := map[string]any{"query": q}
	if len(g.vars) > 0 || g.chance(0.2) {
		req["variables"] = g.vars
	}
	if strings.HasPrefix(q, "query Named") && g.chance(0.5) {
		req["operationName"] = g.pick("Named", "Named", "Other")
	}
	b, _ := json.Marshal(req)
	return b
}

func (g *docGen) newVar(typ string, value any, provide bool) string {
	g.nVar++
	name := fmt.Sprintf("v%d", g.nVar)
	g.varDefs = append(g.varDefs, "$"+name+": "+typ)
	if provide {
		g.vars[name] = value
	}
	return "$" + name
}

// directive is "", or a @skip/@include on a literal or a variable.
func (g *docGen) directive() string {
	if !g.chance(0.15) {
		return ""
	}
	name := g.pick("skip", "include")
	if g.chance(0.3) {
		return fmt.Sprintf(" @%s(if: %v)", name, g.chance(0.5))
	}
	switch {
	case g.chance(0.03): // a nullable variable with a default, sent as null
		return fmt.Sprintf(" @%s(if: %s)", name, g.newVar("Boolean = true", nil, true))
	case g.chance(0.03): // a required variable not sent
		return fmt.Sprintf(" @%s(if: %s)", name, g.newVar("Boolean!", nil, false))
	}
	return fmt.Sprintf(" @%s(if: %s)", name, g.newVar("Boolean!", g.chance(0.5), true))
}

func (g *docGen) alias(field string) string {
	if !g.chance(0.2) {
		return field
	}
	return g.pick("a", "b", "x"+field, field) + ": " + field // duplicate keys merge, or conflict (a validation error)
}

// selection wraps the chosen fields of typeName in inline fragments and named fragments at random.
func (g *docGen) selection(typeName string, parts []string) string {
	var out []string
	for len(parts) > 0 {
		n := 1 + g.r.IntN(len(parts))
		chunk := strings.Join(parts[:n], " ")
		parts = parts[n:]
		switch {
		case g.chance(0.15):
			cond := ""
			if g.chance(0.7) {
				cond = " on " + typeName
			}
			out = append(out, "..."+cond+g.directive()+" { "+chunk+" }")
		case g.chance(0.15):
			name := fmt.Sprintf("F%d", len(g.fragments)+1)
			g.fragments = append(g.fragments, "fragment "+name+" on "+typeName+" { "+chunk+" }")
			spread := "..." + name + g.directive()
			if g.chance(0.2) {
				spread += " ..." + name // a second spread of one fragment in one selection set is skipped
			}
			out = append(out, spread)
		default:
			out = append(out, chunk)
		}
	}
	return strings.Join(out, " ")
}

func (g *docGen) billSelection() string {
	var parts []string
	for _, f := range billFieldNames {
		if g.chance(0.35) {
			parts = append(parts, g.alias(f)+g.directive())
		}
	}
	if g.chance(0.1) {
		parts = append(parts, "__typename")
	}
	if len(parts) == 0 || g.chance(0.05) {
		parts = append(parts, g.pick(billFieldNames...))
	}
	g.r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	return g.selection("Bill", parts)
}

func (g *docGen) pageSelection() string {
	var parts []string
	if g.chance(0.9) {
		parts = append(parts, g.alias("items")+g.directive()+" { "+g.billSelection()+" }")
	}
	if g.chance(0.15) {
		parts = append(parts, g.pick("items", "more: items")+" { "+g.billSelection()+" }")
	}
	if g.chance(0.6) {
		parts = append(parts, g.alias("nextCursor")+g.directive())
	}
	if g.chance(0.1) || len(parts) == 0 {
		parts = append(parts, "__typename")
	}
	g.r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	return g.selection("BillsPage", parts)
}

func (g *docGen) root() string {
	switch k := g.r.IntN(36); {
	case k < 11:
		return g.alias("bills") + g.billsArgs() + g.directive() + " { " + g.pageSelection() + " }"
	case k < 14:
		return g.alias("bill") + g.billArgs() + g.directive() + " { " + g.billSelection() + " }"
	case k < 20:
		return g.membersRoot()
	case k < 21:
		return "__typename"
	case k < 22:
		return "__schema { queryType { name } }"
	case k < 23:
		return g.lobbyingRoot()
	case k < 27:
		return g.budgetsRoot()
	case k < 31:
		return g.lobbyingRoot()
	default:
		return g.regulatoryRoot()
	}
}

func (g *docGen) billArgs() string {
	id := g.pick("hr1005-116", "hr1001-116", "s12-117", "hres5-118", "hr9-118", "nope-1", "", "a\u0000b", "<&>")
	if g.chance(0.5) {
		return "(id: " + g.newVar(g.pick("ID!", "ID!", "String!"), id, true) + ")"
	}
	b, _ := json.Marshal(id)
	return "(id: " + string(b) + ")"
}

func (g *docGen) billsInput() map[string]any {
	in := map[string]any{}
	if g.chance(0.3) && len(g.cursors) > 0 {
		c := g.cursors[g.r.IntN(len(g.cursors))]
		for k, v := range c.filter {
			in[k] = v
		}
		in["cursor"] = c.cursor
	}
	if g.chance(0.5) {
		in["limit"] = []any{1, 2, 3, 25, 30, 100, 1, 2, 3, 25, 30, 100, 0, 101, -5}[g.r.IntN(15)]
	}
	if g.chance(0.3) {
		in["congress"] = []any{115, 116, 117, 118, 999}[g.r.IntN(5)]
	}
	if g.chance(0.25) {
		in["type"] = g.pick("hr", "HR", "s", "hres", "zz")
	}
	if g.chance(0.25) {
		in["q"] = g.pick("water", "H.R. 1005", "veterans", `"unterminated`, "&&", "Ünïcödé", "a\u0000")
	}
	if g.chance(0.05) {
		in["cursor"] = g.pick("garbage", "eyJrIjpbIngiXX0", "")
	}
	return in
}

func (g *docGen) billsArgs() string {
	switch k := g.r.IntN(10); {
	case k < 2:
		return ""
	case k < 6:
		in := g.billsInput()
		var vars map[string]any = in
		if g.chance(0.05) { // a limit that does not coerce
			vars = map[string]any{"limit": g.pick("5", "1.5", "x")}
		}
		return "(input: " + g.newVar(g.pick("BillsInput", "BillsInput", "BillsInput!"), vars, !g.chance(0.05)) + ")"
	case k < 8:
		// one member from a variable inside a literal
		lim := []any{2, 5, 101}[g.r.IntN(3)]
		return "(input: {congress: 116, limit: " + g.newVar("Int", lim, g.chance(0.9)) + "})"
	default:
		var fields []string
		for k, v := range g.billsInput() {
			b, _ := json.Marshal(v)
			fields = append(fields, k+": "+string(b))
		}
		return "(input: {" + strings.Join(fields, ", ") + "})"
	}
}

// FuzzCompiledMatchesReference posts fuzzed documents and variables to the compiled path and to gqlgen's
// executor on one seeded database: the answers must be the same bytes (the differential check of
// TestCompiledMatchesReference on whatever the fuzzer writes).
func FuzzCompiledMatchesReference(f *testing.F) {
	g := &docGen{r: rand.New(rand.NewPCG(7, 7))}
	for range 16 {
		var req struct {
			Query     string          `json:"query"`
			Variables json.RawMessage `json:"variables"`
		}
		_ = json.Unmarshal(g.request(), &req)
		f.Add(req.Query, string(req.Variables))
	}
	f.Add(`{ bills { items { id officialTitle } nextCursor } }`, ``)
	f.Add(`query($in: BillsInput) { bills(input: $in) { a: items { id } b: items { number } } }`, `{"in":{"limit":3,"congress":116}}`)
	f.Add(`query($s: Boolean!) { bills { items { id @skip(if: $s) ...F } } } fragment F on Bill { type }`, `{"s":false}`)
	f.Add(`{ bill(id: "hr1005-116") { __typename id sourceUrl } x: bill(id: "none") { id } }`, `null`)
	f.Add(`{ members(input: {congress: 117, limit: 3}) { items { name state terms { congress chamber party } } nextCursor } }`, ``)
	f.Add(`query($c: String) { members(input: {chamber: $c}) { items { ...M t: terms { party } } } } fragment M on Member { member_id terms { congress } }`, `{"c":"Senate"}`)
	f.Add(`query($s: Boolean!) { members { items { terms @skip(if: $s) { party } name } } bills { nextCursor } }`, `{"s":true}`)
	f.Add(`{ members(input: {chamber: "senat"}) { nextCursor } }`, ``)
	f.Add(`{ federalBudgets(input: {dataset: APPROPRIATIONS, agency: "power"}) { items { id amount estimate edition transition_quarter } nextCursor } }`, ``)
	f.Add(`query($in: FederalBudgetsInput!) { federalBudgets(input: $in) { items { ...B } } } fragment B on FederalBudgetLine { fiscal_year_to_date_amount month }`, `{"in":{"dataset":"OUTLAYS","agency":"DEPT","limit":3}}`)
	f.Add(`{ federalBudgets(input: {dataset: OUTLAYS, bureau_code: "B1"}) { nextCursor } }`, ``)
	f.Add(`{ regulatoryFilings(input: {agency_name: "co", limit: 5}) { items { id rins docket_ids agencies { agency_id name slug parent_agency_id } significant } nextCursor } }`, ``)
	f.Add(`{ lobbyingDisclosures(input: {agency_acted_on: "agency 1", limit: 4}) { items { id income posted_at issue_areas activities { issue_area agencies_acted_on lobbyists { name is_new } } } nextCursor } }`, ``)
	f.Add(`query($in: RegulatoryFilingsInput) { regulatoryFilings(input: $in) { items { ...R a: agencies { __typename name } } } } fragment R on RegulatoryFiling { type filing_period agencies { slug } }`, `{"in":{"rIN":"2060-AV1","type":"RULE"}}`)
	d := newDiffEnv(f)
	f.Fuzz(func(t *testing.T, query, variables string) {
		req := map[string]any{"query": query}
		if variables != "" {
			if !json.Valid([]byte(variables)) {
				return
			}
			req["variables"] = json.RawMessage(variables)
		}
		body, err := json.Marshal(req)
		if err != nil {
			return
		}
		d.requireSameAnswers(t, body)
	})
}
