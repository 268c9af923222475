package reliability

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// Documents shaped to evade the cost budget (docs/design.md D27): each is
// sent once with a fresh key of a tier whose budget is far from spent, and
// the points charged — read from the "costprobe-cost" policy's r in
// RateLimit, and again from the key's usage row — must equal the cost of
// the operation that runs by the rules of docs/design.md D12 (fragments
// expanded, a fragment spread twice counted twice, only the selected
// operation, aliases counted, @skip/@include not evaluated, limits read from
// variables after coercion, an unsized list 25). Charging more than runs is
// allowed only where D12 says so (a spread counted twice, a field a
// directive leaves out); charging less never. Against what the backend
// executed: the response holds exactly the root fields of the operation that
// ran, no page holds more items than the limit the cost was computed with,
// and the cost of the response itself — an object 1, each element of a list
// 1 plus its selection, at the sizes actually returned — is never more than
// what was charged.

// Tier costprobe: a request quota far above what the test sends and a
// budget of 1 000 000 points an hour, so that after one request of cost > 10
// the budget is the policy closest to exhaustion and RateLimit reports it:
// (1 000 000 − c)/1 000 000 < 99 999/100 000.
const (
	probeTier   = "tier costprobe 100000/m cost 1000000/h bills members regulatory_filings federal_budgets lobbying_disclosures changes"
	probeBudget = 1000000
)

// Selections and their D12 costs.
const (
	// 1 + 100 × (1 + 25 × 1): a page of 100 members with their terms (unsized)
	mt100 = `members(input:{limit:100}) { items { name terms { congress chamber } } }`
	c100  = 2601
	// 1 + 10 × 1
	b10  = `bills(input:{limit:10}) { items { id officialTitle } nextCursor }`
	cb10 = 11
	// 1 + 50 × 1
	b50  = `bills(input:{limit:50}) { items { id } }`
	cb50 = 51
	// a selection of Member for variable-limit documents
	memberSel = `{ items { name terms { congress } } }`
	// 1 + 10 × (1 + 25 × (1 + 25 × 1)): lists three deep, the inner two unsized
	lobbying10 = `lobbyingDisclosures(input:{limit:10}) { items { id activities { issue_area lobbyists { name } } } }`
	cLobbying  = 6511
)

// costCase is one document, the operation to run and what it must cost.
type costCase struct {
	name      string
	query     string
	operation string
	variables map[string]any
	cost      int64          // D12 cost of the selected operation
	roots     []string       // response keys of data: the operation that ran
	limits    map[string]int // response key → the page size its cost used
}

func costCases() []costCase {
	return []costCase{
		{name: "operationName picks the cheap operation",
			query:     `query Big { a: ` + mt100 + ` b: ` + mt100 + ` } query Small { ` + b50 + ` }`,
			operation: "Small", cost: cb50, roots: []string{"bills"}, limits: map[string]int{"bills": 50}},
		{name: "operationName picks the expensive operation after a cheap one",
			query:     `query Small { ` + b50 + ` } query Big { a: ` + mt100 + ` b: ` + mt100 + ` }`,
			operation: "Big", cost: 2 * c100, roots: []string{"a", "b"}, limits: map[string]int{"a": 100, "b": 100}},
		{name: "fragment shared by two operations, the first",
			query:     `query A { ...Heavy } query B { ...Heavy ` + b10 + ` } fragment Heavy on Query { ` + mt100 + ` }`,
			operation: "A", cost: c100, roots: []string{"members"}, limits: map[string]int{"members": 100}},
		{name: "fragment shared by two operations, the second",
			query:     `query A { ...Heavy } query B { ...Heavy ` + b10 + ` } fragment Heavy on Query { ` + mt100 + ` }`,
			operation: "B", cost: c100 + cb10, roots: []string{"bills", "members"}, limits: map[string]int{"members": 100, "bills": 10}},
		{name: "chained fragments",
			query: `query Q { ...F1 } fragment F1 on Query { ...F2 ` + b10 + ` } fragment F2 on Query { ...F3 }
fragment F3 on Query { members(input:{limit:40}) { items { ...T } } } fragment T on Member { name terms { congress } }`,
			operation: "Q", cost: cb10 + 1 + 40*26, roots: []string{"bills", "members"}, limits: map[string]int{"members": 40, "bills": 10}},
		{name: "fragment spread twice counts twice",
			query:     `query Q { ...F ...F } fragment F on Query { ` + mt100 + ` }`,
			operation: "Q", cost: 2 * c100, roots: []string{"members"}, limits: map[string]int{"members": 100}},
		{name: "aliases repeating an expensive field",
			query: `{ a: ` + mt100 + ` b: ` + mt100 + ` c: ` + mt100 + ` }`,
			cost:  3 * c100, roots: []string{"a", "b", "c"}, limits: map[string]int{"a": 100, "b": 100, "c": 100}},
		{name: "inline fragments",
			query: `{ ... on Query { ` + mt100 + ` } ... { ` + b10 + ` } }`,
			cost:  c100 + cb10, roots: []string{"bills", "members"}, limits: map[string]int{"members": 100, "bills": 10}},
		{name: "include false is still charged",
			query: `{ ` + b10 + ` m: members(input:{limit:100}) @include(if: false) { items { name terms { congress chamber } } } }`,
			cost:  c100 + cb10, roots: []string{"bills"}, limits: map[string]int{"bills": 10}},
		{name: "skip by a variable on a spread is still charged",
			query:     `query Q($s: Boolean!) { ` + b10 + ` ...F @skip(if: $s) } fragment F on Query { ` + mt100 + ` }`,
			operation: "Q", variables: map[string]any{"s": true},
			cost: c100 + cb10, roots: []string{"bills"}, limits: map[string]int{"bills": 10}},
		{name: "include by a variable on an inline fragment",
			query:     `query Q($s: Boolean!) { ` + b10 + ` ... @include(if: $s) { ` + mt100 + ` } }`,
			operation: "Q", variables: map[string]any{"s": true},
			cost: c100 + cb10, roots: []string{"bills", "members"}, limits: map[string]int{"members": 100, "bills": 10}},
		{name: "limit from a variable",
			query:     `query Q($n: Int) { members(input:{limit:$n}) ` + memberSel + ` }`,
			operation: "Q", variables: map[string]any{"n": 100},
			cost: c100, roots: []string{"members"}, limits: map[string]int{"members": 100}},
		{name: "limit from an input object variable",
			query:     `query Q($in: MembersInput) { members(input:$in) ` + memberSel + ` }`,
			operation: "Q", variables: map[string]any{"in": map[string]any{"limit": 100}},
			cost: c100, roots: []string{"members"}, limits: map[string]int{"members": 100}},
		{name: "limit from a variable's default",
			query:     `query Q($n: Int = 100) { members(input:{limit:$n}) ` + memberSel + ` }`,
			operation: "Q",
			cost:      c100, roots: []string{"members"}, limits: map[string]int{"members": 100}},
		{name: "limit variable left out: the default page of 25",
			query:     `query Q($n: Int) { members(input:{limit:$n}) ` + memberSel + ` }`,
			operation: "Q",
			cost:      1 + 25*26, roots: []string{"members"}, limits: map[string]int{"members": 25}},
		{name: "variable limits on aliased fields",
			query:     `query Q($a: Int, $b: Int) { x: members(input:{limit:$a}) ` + memberSel + ` y: bills(input:{limit:$b}) { items { id } } }`,
			operation: "Q", variables: map[string]any{"a": 100, "b": 100},
			cost: c100 + 101, roots: []string{"x", "y"}, limits: map[string]int{"x": 100, "y": 100}},
		{name: "lists three deep",
			query: `{ ` + lobbying10 + ` }`,
			cost:  cLobbying, roots: []string{"lobbyingDisclosures"}, limits: map[string]int{"lobbyingDisclosures": 10}},
	}
}

// TestCostBudgetChargesTheOperationThatRuns: see the top of this file.
func TestCostBudgetChargesTheOperationThatRuns(t *testing.T) {
	t.Parallel()
	s := stack.New(t, &bins)
	s.Setenv("CIVICGATE_USAGE_FLUSH", "1s")
	s.Prepare()
	s.StartRecordsd()
	s.StartGateway(costProbeCaddyfile(t, s.Root))

	charged := map[string]int64{} // organization → points charged (from RateLimit)
	var keys []string
	for i, c := range costCases() {
		org := fmt.Sprintf("costprobe%02d", i)
		t.Run(c.name, func(t *testing.T) {
			key, _ := s.IssueKey(org, "costprobe", "live")
			keys = append(keys, key)
			points, data := costProbe(t, s, key, c)
			charged[org] = points
			switch {
			case points < c.cost:
				t.Fatalf("charged %d points, less than the %d the operation costs (D12)", points, c.cost)
			case points != c.cost:
				t.Fatalf("charged %d points, want %d (D12)", points, c.cost)
			}
			var roots []string
			executed := int64(0)
			for k, v := range data {
				roots = append(roots, k)
				executed += responseCost(v)
				if limit, ok := c.limits[k]; ok {
					if n := pageItems(v); n > limit {
						t.Errorf("%s returned %d items, more than the limit of %d its cost was computed with", k, n, limit)
					}
				}
			}
			sort.Strings(roots)
			if strings.Join(roots, ",") != strings.Join(c.roots, ",") {
				t.Errorf("the backend answered root fields %v, want %v (the selected operation)", roots, c.roots)
			}
			if executed > points {
				t.Errorf("the response costs %d at the sizes returned, more than the %d points charged", executed, points)
			}
			if executed == 0 {
				t.Error("the backend returned nothing to compare with")
			}
			t.Logf("charged %d, response %d", points, executed)
		})
	}

	// The usage rows say the same: the cost column is what was charged, for
	// one admitted request per organization.
	for org, points := range charged {
		stack.WaitFor(t, 30*time.Second, "usage of "+org, func() error {
			out := s.Run(bins.Civicgate, "keys", "usage", "--org", org, "--json")
			var doc struct {
				Totals struct {
					Admitted int64 `json:"admitted"`
					Cost     int64 `json:"cost"`
				} `json:"totals"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("keys usage --json: %v\n%s", err, out)
			}
			if doc.Totals.Admitted > 1 || doc.Totals.Cost > points {
				t.Fatalf("usage of %s: %+v, want 1 admitted and %d points", org, doc.Totals, points)
			}
			if doc.Totals.Admitted != 1 || doc.Totals.Cost != points {
				return fmt.Errorf("usage %+v, want 1 admitted and %d points", doc.Totals, points)
			}
			return nil
		})
	}
	s.CheckLogs(t, keys...)
}

// costProbeCaddyfile copies the shipped Caddyfiles with the costprobe tier
// added to tiers.caddy, and returns the copy of Caddyfile.local.
func costProbeCaddyfile(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(root, "caddyfile", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("shipped Caddyfiles: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(f) == "tiers.caddy" {
			b = append(b, probeTier+"\n"...)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "Caddyfile.local")
}

// probeRateLimit is the budget's RateLimit. Its t is not checked here: a
// document cheaper than the budget's lease (2 % of it) takes a lease, and t
// then reaches up to two hours (leased points count as spent at the lease's
// end until it is settled, D26); r is exact either way (Redis' remaining
// plus the gateway's unspent lease).
var probeRateLimit = regexp.MustCompile(`^"costprobe-cost";r=(\d+);t=\d+$`)

// costProbe sends c with a fresh key and returns the points charged (the
// budget less the r RateLimit reports) and the response's data.
func costProbe(t *testing.T, s *stack.Stack, key string, c costCase) (int64, map[string]any) {
	t.Helper()
	req := map[string]any{"query": c.query}
	if c.operation != "" {
		req["operationName"] = c.operation
	}
	if c.variables != nil {
		req["variables"] = c.variables
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	r, err := http.NewRequest(http.MethodPost, s.HTTPSURL+"/v1/graphql", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+key)
	r.Header.Set("Content-Type", "application/json")
	resp, err := s.Client.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Data   map[string]any    `json:"data"`
		Errors []json.RawMessage `json:"errors"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &out) != nil || out.Data == nil || len(out.Errors) > 0 {
		t.Fatalf("want 200 with data, got %d %.400s", resp.StatusCode, b)
	}
	m := probeRateLimit.FindStringSubmatch(resp.Header.Get("RateLimit"))
	if m == nil {
		t.Fatalf("RateLimit %q does not report the cost budget", resp.Header.Get("RateLimit"))
	}
	left, _ := strconv.ParseInt(m[1], 10, 64)
	return probeBudget - left, out.Data
}

// responseCost is D12's cost measured on a response instead of a document:
// an object 1 plus its members, a list the sum of its elements, a scalar or
// null 0 — the work the backend did, at the sizes it returned.
func responseCost(v any) int64 {
	switch x := v.(type) {
	case map[string]any:
		n := int64(1)
		for _, f := range x {
			n += responseCost(f)
		}
		return n
	case []any:
		n := int64(0)
		for _, e := range x {
			n += responseCost(e)
		}
		return n
	}
	return 0
}

// pageItems is the number of items of a page ({items, nextCursor}).
func pageItems(v any) int {
	page, _ := v.(map[string]any)
	items, _ := page["items"].([]any)
	return len(items)
}
