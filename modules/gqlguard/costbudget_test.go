package gqlguard

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/gqlguard/analysis"
	"github.com/civicgate/civicgate/modules/gqlguard/document"
	"github.com/civicgate/civicgate/modules/gqlguard/internal/reference"
)

// The key's cost budget (costbudget.go): what the guard spends, when, and
// how it answers a budget that says no.

// budgetRecorder is a contract.CostBudget that records what it is asked and
// answers with decide (nil: the points are taken). On an HTTP request it
// sets RateLimit as civic_rate_limit's budget does.
type budgetRecorder struct {
	mu      sync.Mutex
	spent   []int64
	headers []bool // whether each Spend got a response header
	decide  func(cost int64) (contract.CostDecision, error)
}

const budgetRateLimit = `"paid-cost";r=49000;t=3600`

func (b *budgetRecorder) Spend(_ context.Context, cost int64, h http.Header) (contract.CostDecision, error) {
	b.mu.Lock()
	b.spent = append(b.spent, cost)
	b.headers = append(b.headers, h != nil)
	decide := b.decide
	b.mu.Unlock()
	if h != nil {
		h.Set("RateLimit", budgetRateLimit)
	}
	if decide == nil {
		return contract.CostDecision{Allowed: true, Budget: hourly}, nil
	}
	return decide(cost)
}

func (b *budgetRecorder) calls() ([]int64, []bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int64(nil), b.spent...), append([]bool(nil), b.headers...)
}

var hourly = contract.Rate{Quota: 50000, Window: time.Hour}

func retryIn(d time.Duration) func(int64) (contract.CostDecision, error) {
	return func(int64) (contract.CostDecision, error) {
		return contract.CostDecision{RetryAfter: d, Budget: hourly}, nil
	}
}

func overBudget(int64) (contract.CostDecision, error) {
	return contract.CostDecision{OverBudget: true, Budget: hourly}, nil
}

func storeFailed(int64) (contract.CostDecision, error) {
	return contract.CostDecision{}, errors.New("redis: connection refused")
}

// budgetServe sends body through g with {civic.families} set to families
// (every family of recordsFamilies when ""), budget b in the context (none
// when nil) and header pairs; it returns the response, the replacer and
// whether the next handler was reached.
func budgetServe(t testing.TB, g *Guard, b contract.CostBudget, families, body string, header ...string) (*httptest.ResponseRecorder, *caddy.Replacer, bool) {
	t.Helper()
	return serveBudget(t, g, b, budgetCall{families: families, body: body, header: header})
}

// budgetServeToken is budgetServe for a caller whose bearer token is token.
func budgetServeToken(t testing.TB, g *Guard, b contract.CostBudget, families, body, token string) (*httptest.ResponseRecorder, *caddy.Replacer, bool) {
	t.Helper()
	return serveBudget(t, g, b, budgetCall{families: families, body: body, token: token})
}

type budgetCall struct {
	families, body, token string
	header                []string
}

func serveBudget(t testing.TB, g *Guard, b contract.CostBudget, c budgetCall) (*httptest.ResponseRecorder, *caddy.Replacer, bool) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.body))
	r.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(c.header); i += 2 {
		r.Header.Set(c.header[i], c.header[i+1])
	}
	repl := caddy.NewReplacer()
	if c.families == "" {
		c.families = "bills,members,regulatory_filings,federal_budgets,lobbying_disclosures"
	}
	repl.Set(contract.CivicFamilies, c.families)
	ctx := context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl)
	ctx = withRequestValue(ctx, func(q *contract.Request) {
		q.SetCredential(&contract.Caller{KeyID: "key_budget"}, c.token, nil)
		if b != nil {
			q.SetCostBudget(b)
		}
	})
	next := &recordNext{}
	w := httptest.NewRecorder()
	if err := g.ServeHTTP(w, r.WithContext(ctx), next); err != nil {
		t.Fatal(err)
	}
	return w, repl, next.body != nil
}

// referenceCost is the cost of op in query by the non-memoised reference
// expander of rootref_test.go (literal limits only).
func referenceCost(t *testing.T, schema *ast.Schema, query, op string) int64 {
	t.Helper()
	parsed, errs := gqlparser.LoadQueryWithRules(schema, query, rules.NewDefaultRules()) // sets field definitions
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	ref := reference.New(parsed, DefaultListSize)
	for _, o := range parsed.Operations {
		if o.Name == op {
			return ref.Measure(o).Cost
		}
	}
	t.Fatalf("no operation %q in %s", op, query)
	return 0
}

// TestCostBudgetSpendsTheDocumentsCost: the cost spent is {graphql.cost},
// and both are the reference expander's cost of the selected operation, for
// documents shaped to make a gateway under- or over-count: fragments shared
// by several operations (only the selected one counts), chained fragments,
// a fragment spread twice, aliases repeating an expensive field, fields
// under @skip/@include (counted whatever the condition, as for
// entitlements), a limit from a variable.
func TestCostBudgetSpendsTheDocumentsCost(t *testing.T) {
	g := provisioned(t, &Guard{Families: recordsFamilies})
	c := testdataSchema(t, "testdata/records.graphqls")
	const shared = `query Cheap { ...Small } query Dear { ...Big ...Small }
fragment Big on Query { members(input: {limit: 50}) { items { name terms { congress } } } }
fragment Small on Query { bill(id: "x") { id } }`
	const pricey = `bills(input: {limit: 50}) { items { id sponsors { name } } }`
	for _, tc := range []struct {
		name, query, op, vars string
		literal               string // the document whose reference cost is expected ("": query)
	}{
		{name: "shared fragments, the cheap operation", query: shared, op: "Cheap"},
		{name: "shared fragments, the dear operation", query: shared, op: "Dear"},
		{name: "chained fragments", query: `query Q { ...A } fragment A on Query { ...B } fragment B on Query { ... on Query { ...C } } fragment C on Query { ` + pricey + ` }`, op: "Q"},
		{name: "a fragment spread twice", query: `query Q { ...F ...F } fragment F on Query { ` + pricey + ` }`, op: "Q"},
		{name: "aliases repeating an expensive field", query: `query Q { a: ` + pricey + ` b: ` + pricey + ` c: ` + pricey + ` }`, op: "Q"},
		{name: "directives", query: `query Q($no: Boolean = false) { bills(input: {limit: 50}) @skip(if: true) { items { id sponsors { name } } } m: members(input: {limit: 20}) @include(if: $no) { items { name } } ... @skip(if: true) { regulatoryFilings { items { id } } } }`, op: "Q"},
		{name: "a variable limit", query: `query Q($n: Int) { bills(input: {limit: $n}) { items { id sponsors { name } } } }`, op: "Q", vars: `{"n":30}`,
			literal: `query Q { bills(input: {limit: 30}) { items { id sponsors { name } } } }`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			literal := tc.literal
			if literal == "" {
				literal = tc.query
			}
			want := referenceCost(t, c, literal, tc.op)
			body := `{"query":` + jsonString(tc.query) + `,"operationName":` + jsonString(tc.op)
			if tc.vars != "" {
				body += `,"variables":` + tc.vars
			}
			b := &budgetRecorder{}
			w, repl, reached := budgetServe(t, g, b, "", body+"}")
			if w.Code != http.StatusNoContent || !reached {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
			published, _ := repl.GetString(contract.GraphQLCost)
			spent, headers := b.calls()
			if len(spent) != 1 || strconv.FormatInt(spent[0], 10) != published || spent[0] != want || !headers[0] {
				t.Fatalf("spent %v (with a header: %v), {graphql.cost} %q, reference cost %d", spent, headers, published, want)
			}
			if got := w.Header().Get("RateLimit"); got != budgetRateLimit {
				t.Errorf("RateLimit %q, want the budget's %q", got, budgetRateLimit)
			}
		})
	}
	cheap, dear := referenceCost(t, c, shared, "Cheap"), referenceCost(t, c, shared, "Dear")
	if cheap >= dear {
		t.Fatalf("the shared-fragment document does not tell its operations apart: %d, %d", cheap, dear)
	}
}

// testdataSchema is the schema file at path, loaded as the guard loads it.
func testdataSchema(t *testing.T, path string) *ast.Schema {
	t.Helper()
	s, err := document.LoadSchema(path)
	if err != nil {
		t.Fatal(err)
	}
	return s.AST
}

// TestCostBudgetRefusedDocumentSpendsNothing: every guard refusal comes
// before the spend, answers exactly as without a budget and spends nothing.
func TestCostBudgetRefusedDocumentSpendsNothing(t *testing.T) {
	g := provisioned(t, &Guard{Families: recordsFamilies, MaxCost: 500, PersistedQueries: &PersistedQueriesConfig{}})
	const token = "cg_live_0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefg"
	for _, tc := range []struct {
		name, families, body string
		status               int
	}{
		{"parse error", "", q(`{ bills { items { id }`), 200},
		{"validation error", "", q(`{ bills { nope } }`), 200},
		{"not entitled (403)", "bills", q(`{ lobbyingDisclosures { nextCursor } }`), 403},
		{"max_cost", "", q(`{ bills(input: {limit: 50}) { items { id sponsors { name } } } }`), 200},
		{"variables that do not coerce", "", `{"query":"query($n: Int) { bills(input: {limit: $n}) { nextCursor } }","variables":{"n":"x"}}`, 400},
		{"unknown operation", "", `{"query":"query A { bills { nextCursor } }","operationName":"B"}`, 400},
		{"APQ hash not registered", "", `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + librarySHA256("{ bills { nextCursor } }") + `"}}}`, 200},
		{"the bearer token in the document", "", q(`{ bills(input: {q: "` + token + `"}) { nextCursor } }`), 400},
		{"not JSON", "", `{"query":`, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			without, _, _ := budgetServeToken(t, g, nil, tc.families, tc.body, token)
			b := &budgetRecorder{}
			w, _, reached := budgetServeToken(t, g, b, tc.families, tc.body, token)
			if spent, _ := b.calls(); len(spent) != 0 || reached {
				t.Fatalf("spent %v, forwarded %v: %d %s", spent, reached, w.Code, w.Body)
			}
			if w.Code != tc.status || w.Code != without.Code || w.Body.String() != without.Body.String() {
				t.Fatalf("%d %s, want the refusal without a budget: %d %s", w.Code, w.Body, without.Code, without.Body)
			}
		})
	}
}

// TestCostBudgetRefusals: a budget without room answers 429 with
// Retry-After (whole seconds, rounded up, at least 1) and the RateLimit the
// budget set; a cost over the whole budget is refused like max_cost; a
// failing store is a 500. None reaches the upstream or publishes
// {graphql.cost}.
func TestCostBudgetRefusals(t *testing.T) {
	g := provisioned(t, &Guard{Families: recordsFamilies})
	const query = `{ bills(input: {limit: 50}) { items { id sponsors { name } } } }`
	for _, tc := range []struct {
		name       string
		decide     func(int64) (contract.CostDecision, error)
		status     int
		body       string
		retryAfter string
	}{
		{"no room for 1.5 s", retryIn(1500 * time.Millisecond), 429, `{"error":"Rate limit exceeded"}`, "2"},
		{"no room for 3 s", retryIn(3 * time.Second), 429, `{"error":"Rate limit exceeded"}`, "3"},
		{"no room, no wait given", retryIn(0), 429, `{"error":"Rate limit exceeded"}`, "1"},
		{"over the whole budget", overBudget, 200, `{"data":null,"errors":[{"message":"Query cost 1301 exceeds the cost budget of 50000 points per hour","locations":[{"line":1,"column":1}],"extensions":{"code":"QUERY_TOO_COMPLEX"}}]}`, ""},
		{"store failed", storeFailed, 500, `{"error":"Internal Server Error"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &budgetRecorder{decide: tc.decide}
			w, repl, reached := budgetServe(t, g, b, "", q(query))
			if w.Code != tc.status || w.Body.String() != tc.body || reached {
				t.Fatalf("%d %s (forwarded %v), want %d %s", w.Code, w.Body, reached, tc.status, tc.body)
			}
			h := w.Header()
			if h.Get("Content-Type") != "application/json" || h.Get("Retry-After") != tc.retryAfter || h.Get("RateLimit") != budgetRateLimit ||
				h.Get("Content-Length") != strconv.Itoa(len(tc.body)) {
				t.Errorf("headers %v", h)
			}
			if v, ok := repl.Get(contract.GraphQLCost); ok {
				t.Errorf("{graphql.cost} published on a refusal: %v", v)
			}
			if spent, _ := b.calls(); len(spent) != 1 || spent[0] != 1301 {
				t.Errorf("spent %v, want [1301]", spent)
			}
		})
	}

	// Over the whole budget is the max_cost refusal, its message aside.
	tight := provisioned(t, &Guard{Families: recordsFamilies, MaxCost: 1000})
	maxCost, _, _ := budgetServe(t, tight, nil, "", q(query))
	over, _, _ := budgetServe(t, g, &budgetRecorder{decide: overBudget}, "", q(query))
	want := strings.Replace(maxCost.Body.String(), "the maximum of 1000", "the cost budget of 50000 points per hour", 1)
	if over.Code != maxCost.Code || over.Body.String() != want || over.Header().Get("Content-Type") != maxCost.Header().Get("Content-Type") {
		t.Errorf("over budget %d %s, want max_cost's form %d %s", over.Code, over.Body, maxCost.Code, want)
	}

	// A client asking for application/graphql-response+json gets the same
	// refusals in that media type.
	w, _, _ := budgetServe(t, g, &budgetRecorder{decide: retryIn(time.Second)}, "", q(query), "Accept", "application/graphql-response+json")
	if w.Code != 429 || w.Header().Get("Retry-After") != "1" || w.Header().Get("Content-Type") != mediaGraphQLResponse ||
		w.Body.String() != `{"errors":[{"message":"Rate limit exceeded","extensions":{"code":"RATE_LIMITED"}}]}` {
		t.Errorf("graphql-response+json 429: %d %v %s", w.Code, w.Header(), w.Body)
	}
	w, _, _ = budgetServe(t, g, &budgetRecorder{decide: overBudget}, "", q(query), "Accept", "application/graphql-response+json")
	if w.Code != 400 || !strings.Contains(w.Body.String(), `"message":"Query cost 1301 exceeds the cost budget of 50000 points per hour"`) {
		t.Errorf("graphql-response+json over budget: %d %s", w.Code, w.Body)
	}
}

// TestCostBudgetWindowNames: the window is named as contract.WindowName
// names it.
func TestCostBudgetWindowNames(t *testing.T) {
	op := &document.Operation{}
	for r, want := range map[contract.Rate]string{
		{Quota: 10, Window: time.Second}:             `Query cost 11 exceeds the cost budget of 10 points per second`,
		{Quota: 10, Window: time.Minute}:             `Query cost 11 exceeds the cost budget of 10 points per minute`,
		{Quota: 10, Window: 24 * time.Hour}:          `Query cost 11 exceeds the cost budget of 10 points per day`,
		{Quota: 10, Window: 90 * time.Second}:        `Query cost 11 exceeds the cost budget of 10 points per 90s`,
		{Quota: 10, Window: 1500 * time.Millisecond}: `Query cost 11 exceeds the cost budget of 10 points per 1500ms`,
	} {
		if got := string(overBudgetBody(op, 11, r)); !strings.Contains(got, `"message":"`+want+`"`) {
			t.Errorf("%v: %s, want the message %q", r, got, want)
		}
	}
	if got := string(overBudgetBody(op, analysis.Saturated, hourly)); !strings.Contains(got, "Query cost (overflowing) exceeds") {
		t.Errorf("analysis.Saturated cost: %s", got)
	}
}

// withRequestValue returns ctx carrying a request value that set filled, as
// civic_auth and civic_rate_limit leave one for the guard.
func withRequestValue(ctx context.Context, set func(q *contract.Request)) context.Context {
	var q contract.Request
	if set != nil {
		set(&q)
	}
	return contract.WithRequest(ctx, q)
}
