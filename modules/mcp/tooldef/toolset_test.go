package tooldef

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func names(tools []*mcp.Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

// The shipped tiers (caddyfile/tiers.caddy) see the tools of their
// families, in manifest order.
func TestToolSetFor(t *testing.T) {
	set := recordsTools(t)
	for owned, want := range map[string][]string{
		"bills,members": {"search_bills", "get_bill", "list_members"},
		"bills,members,regulatory_filings,federal_budgets,lobbying_disclosures,changes": {
			"search_bills", "get_bill", "list_members", "search_regulatory_filings", "list_budget_lines", "search_lobbying_disclosures"},
		" lobbying_disclosures , bills ": {"search_bills", "get_bill", "search_lobbying_disclosures"},
		"changes":                        {},
		"":                               {},
		"unknown,,":                      {},
	} {
		got := set.For(owned)
		if got == nil || !slices.Equal(names(got), want) {
			t.Errorf("For(%q) = %v, want %v", owned, names(got), want)
		}
	}
	// An empty list is [] on the wire, not null.
	if raw, _ := json.Marshal(set.For("changes")); string(raw) != "[]" {
		t.Errorf("no tools: %s", raw)
	}
	if !slices.Equal(set.Families(), []string{"bills", "federal_budgets", "lobbying_disclosures", "members", "regulatory_filings"}) {
		t.Errorf("families %v", set.Families())
	}
}

// A repeated For allocates nothing and returns the same list; concurrent
// first calls agree.
func TestToolSetForShared(t *testing.T) {
	set := recordsTools(t)
	var wg sync.WaitGroup
	lists := make([][]*mcp.Tool, 8)
	for i := range lists {
		wg.Go(func() { lists[i] = set.For("members,bills") })
	}
	wg.Wait()
	for _, l := range lists {
		if !slices.Equal(names(l), []string{"search_bills", "get_bill", "list_members"}) {
			t.Fatalf("list %v", names(l))
		}
	}
	first := set.For("bills,members")
	if allocs := testing.AllocsPerRun(100, func() { _ = set.For("bills,members") }); allocs != 0 {
		t.Errorf("For allocates %v times per call", allocs)
	}
	if &set.For("members,bills")[0] != &first[0] {
		t.Error("the same family set built a second list")
	}
}

func TestToolEntitledAndLookup(t *testing.T) {
	set := recordsTools(t)
	tool, ok := set.Lookup("search_lobbying_disclosures")
	if !ok {
		t.Fatal("no search_lobbying_disclosures")
	}
	if tool.Entitled("bills,members") || !tool.Entitled("bills,lobbying_disclosures") || tool.Entitled("") {
		t.Error("entitlement does not follow the tool's family")
	}
	if _, ok := set.Lookup("search_lobbying"); ok {
		t.Error("a prefix found a tool")
	}
	// Every tool the free tier sees, it may call; and no other.
	free := "bills,members"
	listed := names(set.For(free))
	for _, tool := range set.Tools() {
		if tool.Entitled(free) != slices.Contains(listed, tool.Name) {
			t.Errorf("%s: listed %v, entitled %v", tool.Name, slices.Contains(listed, tool.Name), tool.Entitled(free))
		}
	}
}

// BenchmarkToolsListForTier is the tools/list lookup of a tier (target
// ≤ 5 µs, docs/mcp.md).
func BenchmarkToolsListForTier(b *testing.B) {
	set := recordsTools(b)
	set.For("bills,members,regulatory_filings,federal_budgets,lobbying_disclosures,changes")
	b.ReportAllocs()
	for b.Loop() {
		if len(set.For("bills,members,regulatory_filings,federal_budgets,lobbying_disclosures,changes")) != 6 {
			b.Fatal("not 6 tools")
		}
	}
}

// BenchmarkToolCallRequest is a call's argument check and request body.
func BenchmarkToolCallRequest(b *testing.B) {
	tool, _ := recordsTools(b).Lookup("search_bills")
	args := json.RawMessage(`{"congress":118,"type":"hr","text":"appropriations","first":25}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.Request(args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResult renders a page of answers.
func BenchmarkResult(b *testing.B) {
	body := []byte(`{"data":{"bills":{"items":[` +
		`{"id":"hr1-118","congress":118,"type":"hr","number":1,"officialTitle":"Lower Energy Costs Act","introducedDate":"2023-03-14","memberName":"Scalise, Steve","memberBioguideId":"S001176","committeeNames":"Energy and Commerce","sourceUrl":null}` +
		`],"nextCursor":"eyJpZCI6ImhyMS0xMTgifQ"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if Result(200, body, "").IsError {
			b.Fatal("error")
		}
	}
}
