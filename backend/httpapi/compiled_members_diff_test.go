package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// The members family on the compiled read path, held to gqlgen's executor as the bills family is
// (compiled_diff_test.go).

var (
	memberFieldNames = []string{"member_id", "bioguide_id", "name", "state"}
	termFieldNames   = []string{"congress", "chamber", "party"}
)

// subsetsOf is every subset of names, the empty one first.
func subsetsOf(names []string) [][]string {
	var out [][]string
	for mask := range 1 << len(names) {
		var s []string
		for i, n := range names {
			if mask&(1<<i) != 0 {
				s = append(s, n)
			}
		}
		out = append(out, s)
	}
	return out
}

// TestCompiledMemberFieldSubsets: every subset of Member's fields with terms absent, or with every subset of
// MemberTerm's fields (an empty one asks __typename), on pages of awkward members, filtered and not.
func TestCompiledMemberFieldSubsets(t *testing.T) {
	d := newDiffEnv(t)
	termSels := []string{""}
	for _, ts := range subsetsOf(termFieldNames) {
		if len(ts) == 0 {
			ts = []string{"__typename"}
		}
		termSels = append(termSels, "terms { "+strings.Join(ts, " ")+" }")
	}
	n := 0
	for _, ms := range subsetsOf(memberFieldNames) {
		for _, terms := range termSels {
			sel := strings.TrimSpace(strings.Join(ms, " ") + " " + terms)
			if sel == "" {
				continue
			}
			for _, in := range []string{`{limit: 30}`, `{congress: 117, limit: 7}`} {
				body, _ := json.Marshal(map[string]any{"query": `{ members(input: ` + in + `) { items { ` + sel + ` } nextCursor } }`})
				d.requireSameAnswers(t, body)
				n++
			}
		}
	}
	if got := compiledExecutions(t, d.api); got < float64(n*2*2) {
		t.Fatalf("only %v compiled executions of %d documents × 4 requests: the subsets did not take the compiled path", got, n)
	}
}

// sampleMemberCursors pages once through a few member filters (on the reference server).
func (d *diffEnv) sampleMemberCursors(t testing.TB) []filteredCursor {
	var out []filteredCursor
	for _, f := range []map[string]any{{}, {"congress": 117}, {"state": "nc"}, {"chamber": "Senate"}, {"congress": 116, "chamber": "house"}} {
		in := map[string]any{"limit": 2}
		for k, v := range f {
			in[k] = v
		}
		body, _ := json.Marshal(map[string]any{"query": `query($in: MembersInput) { members(input: $in) { nextCursor } }`, "variables": map[string]any{"in": in}})
		a := postGraphQL(t, d.ref.URL, body, "")
		var r struct {
			Data struct {
				Members struct{ NextCursor *string } `json:"members"`
			} `json:"data"`
		}
		if err := json.Unmarshal(a.body, &r); err != nil || r.Data.Members.NextCursor == nil {
			t.Fatalf("no members cursor for %v: %s", f, a.body)
		}
		out = append(out, filteredCursor{filter: f, cursor: *r.Data.Members.NextCursor})
	}
	return out
}

func (g *docGen) termSelection() string {
	var parts []string
	for _, f := range termFieldNames {
		if g.chance(0.45) {
			parts = append(parts, g.alias(f)+g.directive())
		}
	}
	if g.chance(0.1) || len(parts) == 0 {
		parts = append(parts, g.pick("__typename", "congress", "party"))
	}
	g.r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	return g.selection("MemberTerm", parts)
}

func (g *docGen) memberSelection() string {
	var parts []string
	for _, f := range memberFieldNames {
		if g.chance(0.4) {
			parts = append(parts, g.alias(f)+g.directive())
		}
	}
	if g.chance(0.5) {
		parts = append(parts, g.alias("terms")+g.directive()+" { "+g.termSelection()+" }")
	}
	if g.chance(0.1) { // a second terms under another key, or merged into the first
		parts = append(parts, g.pick("terms", "t2: terms")+" { "+g.termSelection()+" }")
	}
	if g.chance(0.1) || len(parts) == 0 {
		parts = append(parts, g.pick("__typename", "name", "member_id"))
	}
	g.r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	return g.selection("Member", parts)
}

func (g *docGen) membersPageSelection() string {
	var parts []string
	if g.chance(0.9) {
		parts = append(parts, g.alias("items")+g.directive()+" { "+g.memberSelection()+" }")
	}
	if g.chance(0.6) {
		parts = append(parts, g.alias("nextCursor")+g.directive())
	}
	if g.chance(0.1) || len(parts) == 0 {
		parts = append(parts, "__typename")
	}
	g.r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	return g.selection("MembersPage", parts)
}

func (g *docGen) membersInput() map[string]any {
	in := map[string]any{}
	if g.chance(0.3) && len(g.memberCursors) > 0 {
		c := g.memberCursors[g.r.IntN(len(g.memberCursors))]
		for k, v := range c.filter {
			in[k] = v
		}
		in["cursor"] = c.cursor
	}
	if g.chance(0.5) {
		in["limit"] = []any{1, 2, 3, 25, 30, 100, 1, 2, 3, 25, 0, 101, -5}[g.r.IntN(13)]
	}
	if g.chance(0.3) { // the slow filter: a Congress's terms in name order
		in["congress"] = []any{105, 115, 116, 117, 118, 999}[g.r.IntN(6)]
	}
	if g.chance(0.25) {
		in["chamber"] = g.pick("house", "Senate", "HOUSE", "senat", "")
	}
	if g.chance(0.25) {
		in["state"] = g.pick("NC", "nc", "WA", "ZZ", "a\u0000")
	}
	if g.chance(0.05) {
		in["cursor"] = g.pick("garbage", "eyJrIjpbIngiXX0", "")
	}
	return in
}

func (g *docGen) membersArgs() string {
	switch k := g.r.IntN(10); {
	case k < 2:
		return ""
	case k < 6:
		in := g.membersInput()
		var vars map[string]any = in
		if g.chance(0.05) { // a congress that does not coerce
			vars = map[string]any{"congress": g.pick("117", "1.5", "x")}
		}
		return "(input: " + g.newVar(g.pick("MembersInput", "MembersInput!"), vars, !g.chance(0.05)) + ")"
	case k < 8:
		lim := []any{2, 5, 101}[g.r.IntN(3)]
		return "(input: {congress: 117, limit: " + g.newVar("Int", lim, g.chance(0.9)) + "})"
	default:
		var fields []string
		for k, v := range g.membersInput() {
			b, _ := json.Marshal(v)
			fields = append(fields, k+": "+string(b))
		}
		return "(input: {" + strings.Join(fields, ", ") + "})"
	}
}

func (g *docGen) membersRoot() string {
	return g.alias("members") + g.membersArgs() + g.directive() + " { " + g.membersPageSelection() + " }"
}
