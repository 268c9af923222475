package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

func mcpCallParams(name string, args map[string]any) *mcpsdk.CallToolParams {
	return &mcpsdk.CallToolParams{Name: name, Arguments: args}
}

// billsPage is the data of a SearchBills page, its items kept as JSON.
type billsPage struct {
	Bills struct {
		Items      []json.RawMessage `json:"items"`
		NextCursor *string           `json:"nextCursor"`
	} `json:"bills"`
}

func itemID(t *testing.T, item json.RawMessage) string {
	t.Helper()
	var b struct{ ID string }
	if err := json.Unmarshal(item, &b); err != nil || b.ID == "" {
		t.Fatalf("an item without an id: %s", item)
	}
	return b.ID
}

// graphqlBills pages POST /v1/graphql through SearchBills with filter, size
// items a page, and returns every item.
func graphqlBills(t *testing.T, s *stack.Stack, key string, op manifestOp, filter map[string]any, size int) []json.RawMessage {
	t.Helper()
	var items []json.RawMessage
	var after *string
	for range 200 {
		vars := map[string]any{"first": size}
		for k, v := range filter {
			vars[k] = v
		}
		if after != nil {
			vars["after"] = *after
		}
		var p billsPage
		if err := json.Unmarshal(graphqlOp(t, s, key, op, vars), &p); err != nil {
			t.Fatal(err)
		}
		items = append(items, p.Bills.Items...)
		if p.Bills.NextCursor == nil {
			return items
		}
		after = p.Bills.NextCursor
	}
	t.Fatalf("POST /v1/graphql SearchBills %v: no last page after 200", filter)
	return nil
}

// checkPaging pages search_bills to the end, the cursor of each page in
// the next call, and compares the items with paging POST /v1/graphql
// through the same operation at another page size (its own cursors, its
// own cache entries): the same bills in the same order, none twice.
func checkPaging(t *testing.T, s *stack.Stack, key string, op manifestOp, congress int) {
	t.Helper()
	const graphqlSize = 7
	// A filter of a few pages: the first bill type of the Congress with 9 to
	// 150 bills.
	var filter map[string]any
	var want []json.RawMessage
	for _, typ := range []string{"sjres", "hjres", "sconres", "hconres", "sres", "hres", "s", "hr"} {
		f := map[string]any{"congress": congress, "type": typ}
		if items := graphqlBills(t, s, key, op, f, 50); len(items) >= 9 && len(items) <= 150 {
			filter, want = f, graphqlBills(t, s, key, op, f, graphqlSize)
			break
		}
	}
	if filter == nil {
		t.Fatalf("no bill type of Congress %d has 9 to 150 bills in the seeded data", congress)
	}
	size := max(2, (len(want)+3)/4)
	if size == graphqlSize || size == 50 {
		size--
	}
	cs := mcpConnect(t, s, key)
	var got []json.RawMessage
	seen := map[string]bool{}
	args := map[string]any{"first": size}
	for k, v := range filter {
		args[k] = v
	}
	pages := 0
	for {
		pages++
		if pages > len(want)/size+2 {
			t.Fatalf("search_bills %v: no last page after %d pages", filter, pages)
		}
		var p billsPage
		if err := json.Unmarshal(mcpData(t, cs, "search_bills", args), &p); err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Bills.Items {
			id := itemID(t, it)
			if seen[id] {
				t.Errorf("page %d repeats %s", pages, id)
			}
			seen[id] = true
		}
		got = append(got, p.Bills.Items...)
		if p.Bills.NextCursor == nil {
			break
		}
		if len(p.Bills.Items) != size {
			t.Errorf("page %d holds %d items and a next cursor, want %d", pages, len(p.Bills.Items), size)
		}
		args["after"] = *p.Bills.NextCursor
	}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	if !sameJSON(a, b) {
		t.Errorf("search_bills %v in pages of %d: %d items; POST /v1/graphql in pages of %d: %d items; they differ", filter, size, len(got), graphqlSize, len(want))
	}
	t.Logf("search_bills %v: %d bills in %d pages of %d, the same as POST /v1/graphql in pages of %d", filter, len(got), pages, size, graphqlSize)
}

var toolRateLimited = regexp.MustCompile(`^Rate limit exceeded \(HTTP 429; retry after (\d+) s\)$`)

// checkQuotaRefusal spends a fresh free key's 30 requests a minute on
// get_bill: the 31st call is a tool error naming the 429 with _meta
// retryAfter and the RateLimit headers' values, the key's POST
// /v1/graphql is refused too (one quota), and the usage rows count the 31
// calls as MCP calls, 30 admitted, and the POST as a refusal.
func checkQuotaRefusal(t *testing.T, s *stack.Stack, billID string, secrets *[]string) {
	t.Helper()
	key, id := s.IssueKey("mcpquota", "free", "live")
	*secrets = append(*secrets, key)
	cs := mcpConnect(t, s, key)
	started := time.Now()
	admitted := 0
	var refused *mcpsdk.CallToolResult
	for range 40 {
		res, _ := mcpCall(t, cs, "get_bill", map[string]any{"id": billID})
		if !res.IsError {
			admitted++
			continue
		}
		refused = res
		break
	}
	if refused == nil {
		t.Fatalf("40 calls of a free key (30/m) all admitted")
	}
	if elapsed := time.Since(started); admitted != 30 && elapsed < 55*time.Second {
		t.Errorf("%d calls admitted before the refusal (in %s), want 30", admitted, elapsed.Round(time.Millisecond))
	}
	text := resultText(refused)
	m := toolRateLimited.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the refused call's text %q", text)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	if after, ok := retryAfterOf(refused.Meta); !ok || after != n || n < 1 || n > 60 {
		t.Errorf("_meta %v: retryAfter want %d (the text's), within the minute", refused.Meta, n)
	}
	if rl := refused.Meta["rateLimit"]; rl != fmt.Sprintf(`"free";r=0;t=%d`, n) {
		t.Errorf("_meta rateLimit %v, want \"free\";r=0;t=%d", rl, n)
	}
	if refused.StructuredContent != nil {
		t.Errorf("a refused call carries structuredContent %v", refused.StructuredContent)
	}
	// One quota: the key's POST /v1/graphql is refused as well, with the
	// policy the tool call's _meta named.
	body := fmt.Sprintf(`{"query":"query($id: ID!) { bill(id: $id) { id } }","variables":{"id":%q}}`, billID)
	x := send(t, s, http.MethodPost, "/v1/graphql", key, body)
	refusal(t, x, "free")
	if p := refused.Meta["rateLimitPolicy"]; p != x.header.Get("RateLimit-Policy") {
		t.Errorf("_meta rateLimitPolicy %v, the POST's RateLimit-Policy %q", p, x.header.Get("RateLimit-Policy"))
	}
	awaitUsage(t, s, id, usageRow{admitted: int64(admitted), refused: 2, mcp: int64(admitted) + 1})
}
