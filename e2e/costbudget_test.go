package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// Documents and their costs by the rules of docs/design.md D12 (an object
// field 1, a scalar 0, a list of objects limit × (1 + its selection), a page
// hands its limit to its items, a list without a limit counts 25).
const (
	// 1 + 100 × (1 + 25 × (1 + 0)) = 2601
	membersTerms100  = `members(input:{limit:100}) { items { terms { congress } } }`
	membersTermsDoc  = `{"query":"{ ` + membersTerms100 + ` }"}`
	membersTermsCost = 2601
	// Three of those and 1 + 83 × 26 = 2159: 9962, under the 10000 document
	// limit, so each is admitted as a document and spends its cost.
	expensiveDoc = `{"query":"{ a: ` + membersTerms100 + ` b: ` + membersTerms100 + ` c: ` + membersTerms100 +
		` d: members(input:{limit:83}) { items { terms { congress } } } }"}`
	expensiveCost = 9962
	// 1 + 5 × 1 = 6
	cheapDoc = `{"query":"{ bills(input:{limit:5}) { items { id } } }"}`
	// 1 + 100 × 1 = 101
	bills100Doc  = `{"query":"{ bills(input:{limit:100}) { items { id } } }"}`
	bills100Cost = 101
)

// upstream is a reverse proxy in front of recordsd that notes the
// X-Request-Id of every request the gateway forwards: what the backend saw.
type upstream struct {
	mu   sync.Mutex
	seen map[string]bool
}

// recordUpstream puts an upstream recorder between the gateway (started
// after this) and recordsd.
func recordUpstream(t *testing.T, s *stack.Stack) *upstream {
	t.Helper()
	backend, err := url.Parse("http://" + s.Getenv("RECORDSD_LISTEN"))
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{seen: map[string]bool{}}
	proxy := httputil.NewSingleHostReverseProxy(backend)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen[r.Header.Get("X-Request-Id")] = true
		u.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.Setenv("CIVICGATE_UPSTREAM", strings.TrimPrefix(srv.URL, "http://"))
	return u
}

// saw reports whether the backend received the request x answers.
func (u *upstream) saw(t *testing.T, x exchange) bool {
	t.Helper()
	id := x.header.Get("X-Request-Id")
	if id == "" {
		t.Fatal("response without X-Request-Id")
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.seen[id]
}

// wantData checks a 200 with data and no errors.
func wantData(t *testing.T, x exchange) {
	t.Helper()
	var body struct {
		Data   map[string]json.RawMessage `json:"data"`
		Errors []json.RawMessage          `json:"errors"`
	}
	if x.status != http.StatusOK || json.Unmarshal([]byte(x.body), &body) != nil || len(body.Data) == 0 || len(body.Errors) > 0 {
		t.Fatalf("want 200 with data, got %d %.300s", x.status, x.body)
	}
}

// wantGraphQLError checks a 200 {"data":null,"errors":[…]} whose first error
// has code (and message, when not "").
func wantGraphQLError(t *testing.T, x exchange, code, message string) {
	t.Helper()
	var body struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message    string `json:"message"`
			Extensions struct {
				Code string `json:"code"`
			} `json:"extensions"`
		} `json:"errors"`
	}
	if x.status != http.StatusOK || json.Unmarshal([]byte(x.body), &body) != nil ||
		string(body.Data) != "null" || len(body.Errors) == 0 || body.Errors[0].Extensions.Code != code ||
		(message != "" && body.Errors[0].Message != message) {
		t.Fatalf("want 200 %s %q, got %d %s", code, message, x.status, x.body)
	}
}

// wantRateLimit checks the RateLimit header exactly.
func wantRateLimit(t *testing.T, x exchange, want string) {
	t.Helper()
	if got := x.header.Get("RateLimit"); got != want {
		t.Fatalf("RateLimit %q, want %q (status %d)", got, want, x.status)
	}
}

// TestCostBudget: the cost budget of docs/design.md D27 through the real
// gateway, the shipped tiers plus one with a small budget (tinybudget: 30/m,
// 5000 points an hour):
//   - a free key (50000 points an hour) sending documents of cost 9962 gets
//     five of them (RateLimit "free-cost";r=<points left>;t=3600), then a 429
//     with Retry-After and RateLimit "free-cost";r=190;t=<Retry-After>, never
//     forwarded, while another free key's cheap documents keep passing;
//   - a document whose cost alone exceeds the whole budget is refused as a
//     document limit (QUERY_TOO_COMPLEX, docs/api.md) before the backend
//     sees it;
//   - documents the guard refuses (validation, 403, over the budget) spend
//     one request each (the request policy's r drops by one) and no points.
func TestCostBudget(t *testing.T) {
	t.Parallel()
	s := stack.New(t, &bins)
	// Whether each admitted document reaches the backend is checked: the response cache stays off.
	s.Setenv("CIVICGATE_CACHE", "off")
	s.Prepare()
	s.StartRecordsd()
	up := recordUpstream(t, s)
	s.StartGateway(gatewayFiles(t, s.Root, []string{"tier tinybudget 30/m cost 5000/h bills members"}))
	query := func(key, body string) exchange {
		return send(t, s, http.MethodPost, "/v1/graphql", key, body)
	}

	t.Run("SpentBudgetRefused", func(t *testing.T) {
		heavy, _ := s.IssueKey("costheavy", "free", "live")
		light, _ := s.IssueKey("costlight", "free", "live")
		var first exchange
		for k := 1; k <= 5; k++ {
			x := query(heavy, expensiveDoc)
			if k == 1 {
				first = x
				if p := x.header.Get("RateLimit-Policy"); p != `"free";q=30;w=60, "free-cost";q=50000;w=3600` {
					t.Fatalf("RateLimit-Policy %q", p)
				}
			}
			wantData(t, x)
			wantRateLimit(t, x, `"free-cost";r=`+strconv.Itoa(50000-k*expensiveCost)+`;t=3600`)
			// The other key's budget is its own; its request quota (30/m)
			// is closer to exhaustion than its points.
			y := query(light, cheapDoc)
			wantData(t, y)
			wantRateLimit(t, y, `"free";r=`+strconv.Itoa(30-k)+`;t=60`)
		}
		x := query(heavy, expensiveDoc)
		n := refusal429(t, x, "free-cost", 50000-5*expensiveCost)
		// The oldest points were spent after the first document was sent and
		// leave the hour 3600 s later.
		if lo := 3600 - x.received.Sub(first.sent).Seconds(); float64(n) < lo || n > 3600 {
			t.Fatalf("Retry-After %d, want between %.0f and 3600", n, lo)
		}
		if up.saw(t, x) {
			t.Fatal("the document refused for its cost reached the backend")
		}
		y := query(light, cheapDoc)
		wantData(t, y)
		if !up.saw(t, y) {
			t.Fatal("an admitted document did not reach the backend")
		}
	})

	t.Run("OverWholeBudget", func(t *testing.T) {
		key, _ := s.IssueKey("costtiny1", "tinybudget", "live")
		x := query(key, expensiveDoc)
		wantGraphQLError(t, x, "QUERY_TOO_COMPLEX", "Query cost 9962 exceeds the cost budget of 5000 points per hour")
		if up.saw(t, x) {
			t.Fatal("a document over the whole budget reached the backend")
		}
		// Nothing was spent: a document of 2601 points leaves 5000 − 2601.
		x = query(key, membersTermsDoc)
		wantData(t, x)
		wantRateLimit(t, x, `"tinybudget-cost";r=2399;t=3600`)
	})

	// A round in which a decision was made without Redis (a call past the 50 ms store timeout on a loaded
	// machine, or the limiter's breaker open after one, which fails no call; on_store_error local then decides
	// in the gateway's memory) cannot judge the shared counts and is repeated with a fresh key, three rounds at
	// most; every answer is checked only once its round was undisturbed (storeFallbacks, quotas_test.go).
	t.Run("RefusedDocumentsSpendNoPoints", func(t *testing.T) {
		for round := 1; round <= 3; round++ {
			fallbacksBefore := storeFallbacks(t, s)
			key, _ := s.IssueKey("costtiny2-"+strconv.Itoa(round), "tinybudget", "live")
			first := query(key, membersTermsDoc)
			// Each refusal below has spent its request: the limiter's RateLimit
			// (the request policy: 30/m, no lease below a quota of 100) counts
			// it; none reaches the backend.
			invalid := query(key, `{"query":"{ bills { nope } }"}`)
			notEntitled := query(key, `{"query":"{ lobbyingDisclosures(input:{limit:1}) { nextCursor } }"}`)
			tooDear := query(key, expensiveDoc)
			// Points left after the three refusals: still 2399, less this one.
			admitted := query(key, bills100Doc)
			if disturbed := storeFallbacks(t, s) - fallbacksBefore; disturbed > 0 {
				t.Logf("round %d: %d decisions made without Redis; repeating with a fresh key", round, disturbed)
				continue
			}
			wantData(t, first)
			wantRateLimit(t, first, `"tinybudget-cost";r=2399;t=3600`)
			wantGraphQLError(t, invalid, "GRAPHQL_VALIDATION_FAILED", "")
			wantRateLimit(t, invalid, `"tinybudget";r=28;t=60`)
			if up.saw(t, invalid) {
				t.Fatal("a document that does not validate reached the backend")
			}
			if notEntitled.status != http.StatusForbidden || notEntitled.body != `{"error":"Tier not entitled to this endpoint family"}` {
				t.Fatalf("want the entitlement 403, got %d %s", notEntitled.status, notEntitled.body)
			}
			wantRateLimit(t, notEntitled, `"tinybudget";r=27;t=60`)
			wantGraphQLError(t, tooDear, "QUERY_TOO_COMPLEX", "Query cost 9962 exceeds the cost budget of 5000 points per hour")
			wantRateLimit(t, tooDear, `"tinybudget";r=26;t=60`)
			if up.saw(t, tooDear) {
				t.Fatal("a document over the whole budget reached the backend")
			}
			wantData(t, admitted)
			wantRateLimit(t, admitted, `"tinybudget-cost";r=`+strconv.Itoa(2399-bills100Cost)+`;t=3600`)
			if !up.saw(t, admitted) {
				t.Fatal("an admitted document did not reach the backend")
			}
			return
		}
		t.Fatal("three rounds in a row had a Redis call fail")
	})
}

// refusal429 checks a cost-budget 429: the exact body, Retry-After N ≥ 1
// and RateLimit "<policy>";r=<left>;t=N. It returns N.
func refusal429(t *testing.T, x exchange, policy string, left int) int64 {
	t.Helper()
	if x.status != http.StatusTooManyRequests || x.body != `{"error":"Rate limit exceeded"}` {
		t.Fatalf("want 429 {\"error\":\"Rate limit exceeded\"}, got %d %s", x.status, x.body)
	}
	n, err := strconv.ParseInt(x.header.Get("Retry-After"), 10, 64)
	if err != nil || n < 1 {
		t.Fatalf("Retry-After %q", x.header.Get("Retry-After"))
	}
	wantRateLimit(t, x, `"`+policy+`";r=`+strconv.Itoa(left)+`;t=`+strconv.FormatInt(n, 10))
	return n
}
