package gqlguard

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/gqlguard/subscribe"
)

// The cost budget on the other ways a document arrives: resolved by hash
// (APQ, trusted documents) and over graphql-sse; and what it costs a request
// in allocations.

// spentOnce checks that b was asked once, with a response header, for the
// cost the guard published.
func spentOnce(t *testing.T, b *budgetRecorder, repl *caddy.Replacer) int64 {
	t.Helper()
	spent, headers := b.calls()
	published, _ := repl.GetString(contract.GraphQLCost)
	if len(spent) != 1 || !headers[0] || strconv.FormatInt(spent[0], 10) != published {
		t.Fatalf("spent %v (with a header: %v), {graphql.cost} %q", spent, headers, published)
	}
	return spent[0]
}

// TestCostBudgetPersistedDocuments: a document sent by APQ hash or
// documentId spends, once resolved, exactly what its text spends; a hash
// that resolves to nothing and an untrusted document spend nothing.
func TestCostBudgetPersistedDocuments(t *testing.T) {
	t.Run("APQ", func(t *testing.T) {
		g := provisioned(t, &Guard{Families: recordsFamilies, PersistedQueries: &PersistedQueriesConfig{}})
		const query = `{ bills(input: {limit: 7}) { items { id sponsors { name } } } }`
		ext := `"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + librarySHA256(query) + `"}}`

		b := &budgetRecorder{}
		w, repl, reached := budgetServe(t, g, b, "", q(query))
		if w.Code != http.StatusNoContent || !reached {
			t.Fatalf("text: %d %s", w.Code, w.Body)
		}
		want := spentOnce(t, b, repl)

		b = &budgetRecorder{}
		w, _, _ = budgetServe(t, g, b, "", `{`+ext+`}`)
		if spent, _ := b.calls(); w.Code != http.StatusOK || len(spent) != 0 {
			t.Fatalf("hash before registration: %d %s, spent %v", w.Code, w.Body, spent)
		}
		for _, body := range []string{`{"query":` + jsonString(query) + `,` + ext + `}`, `{` + ext + `}`} { // register, then by hash
			b = &budgetRecorder{}
			w, repl, reached = budgetServe(t, g, b, "", body)
			if w.Code != http.StatusNoContent || !reached {
				t.Fatalf("%s: %d %s", body, w.Code, w.Body)
			}
			if got := spentOnce(t, b, repl); got != want {
				t.Fatalf("%s: spent %d, the text spends %d", body, got, want)
			}
		}
		b = &budgetRecorder{decide: retryIn(time.Second)}
		if w, _, reached = budgetServe(t, g, b, "", `{`+ext+`}`); w.Code != http.StatusTooManyRequests || reached {
			t.Fatalf("by hash, no room: %d %s (forwarded %v)", w.Code, w.Body, reached)
		}
	})
	t.Run("trusted documents", func(t *testing.T) {
		g := provisioned(t, &Guard{Schema: "testdata/library.graphqls", TrustedDocuments: "testdata/manifest.json", TrustedOnly: []string{"*"}})
		b := &budgetRecorder{}
		w, repl, reached := budgetServe(t, g, b, "", q(shelfQuery))
		if w.Code != http.StatusNoContent || !reached {
			t.Fatalf("trusted text: %d %s", w.Code, w.Body)
		}
		want := spentOnce(t, b, repl)
		b = &budgetRecorder{}
		w, repl, reached = budgetServe(t, g, b, "", `{"documentId":"sha256:`+librarySHA256(shelfQuery)+`"}`)
		if w.Code != http.StatusNoContent || !reached {
			t.Fatalf("documentId: %d %s", w.Code, w.Body)
		}
		if got := spentOnce(t, b, repl); got != want {
			t.Fatalf("documentId spent %d, the text spends %d", got, want)
		}
		b = &budgetRecorder{}
		w, _, reached = budgetServe(t, g, b, "", q(`{ book(id: "b1") { title } }`))
		if spent, _ := b.calls(); w.Body.String() != bodyUntrusted || reached || len(spent) != 0 {
			t.Fatalf("untrusted: %d %s (forwarded %v), spent %v", w.Code, w.Body, reached, spent)
		}
	})
}

// codeSubscriptionLimit is the code of a refusal over max_per_key.
const codeSubscriptionLimit = subscribe.CodeSubscriptionLimit

// TestCostBudgetEventStream: a graphql-sse request spends once its
// subscription slot is held: over the per-key bound it spends nothing, and
// refused by the budget it gives its slot back.
func TestCostBudgetEventStream(t *testing.T) {
	g := provisioned(t, &Guard{Schema: "testdata/library.graphqls", Subscriptions: &SubscriptionsConfig{MaxPerKey: 1}})
	sse := []string{"Accept", "text/event-stream"}
	for _, doc := range []string{loanEventsSub, booksQuery} {
		b := &budgetRecorder{}
		w, repl, reached := budgetServe(t, g, b, "", q(doc), sse...)
		if w.Code != http.StatusNoContent || !reached {
			t.Fatalf("%s: %d %s", doc, w.Code, w.Body)
		}
		spentOnce(t, b, repl)
	}

	b := &budgetRecorder{decide: retryIn(2 * time.Second)}
	w, _, reached := budgetServe(t, g, b, "", q(loanEventsSub), sse...)
	if w.Code != http.StatusTooManyRequests || w.Body.String() != `{"error":"Rate limit exceeded"}` || w.Header().Get("Retry-After") != "2" || reached {
		t.Fatalf("no room: %d %v %s (forwarded %v)", w.Code, w.Header(), w.Body, reached)
	}
	if held := g.subs.SlotsHeld("key_budget"); held != 0 {
		t.Fatalf("a stream refused by the budget still holds %d slots", held)
	}

	slot := g.subs.KeySlots("key_budget")
	if !slot.Acquire() { // another stream of the key is open
		t.Fatal("slot not free")
	}
	defer slot.Release()
	b = &budgetRecorder{}
	w, _, reached = budgetServe(t, g, b, "", q(loanEventsSub), sse...)
	if spent, _ := b.calls(); w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(codeSubscriptionLimit)) || reached || len(spent) != 0 {
		t.Fatalf("over max_per_key: %d %s (forwarded %v), spent %v", w.Code, w.Body, reached, spent)
	}
}

// allowAll is a budget that always has room and allocates nothing.
type allowAll struct{}

func (allowAll) Spend(context.Context, int64, http.Header) (contract.CostDecision, error) {
	return contract.CostDecision{Allowed: true}, nil
}

// TestCostBudgetAllocations: without a budget in the context the spend adds
// nothing to a request (looking for it and skipping it allocate nothing);
// with one, the guard's side of the spend allocates nothing either.
func TestCostBudgetAllocations(t *testing.T) {
	g := provisioned(t, &Guard{})
	body := []byte(`{"query":` + jsonString(benchBillsQuery) + `,"variables":{"congress":118,"cursor":null},"operationName":"Bills"}`)
	next := &recordNext{}
	allocs := func(ctx context.Context) float64 {
		serve := func() {
			r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/", bytes.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			if err := g.ServeHTTP(w, r, next); err != nil || w.Code != http.StatusNoContent {
				t.Fatalf("%d %s %v", w.Code, w.Body, err)
			}
		}
		serve() // compiled and cached
		return testing.AllocsPerRun(200, serve)
	}
	base := context.WithValue(context.Background(), caddy.ReplacerCtxKey, caddy.NewReplacer())
	// civic_auth attaches the request value before the guard runs: with it,
	// a budget in its slot must cost the guard nothing more.
	without := allocs(withRequestValue(base, nil))
	with := allocs(withRequestValue(base, func(q *contract.Request) { q.SetCostBudget(allowAll{}) }))
	if with != without {
		t.Errorf("a request with a cost budget allocates %v times, without one %v", with, without)
	}
	w := httptest.NewRecorder()
	if n := testing.AllocsPerRun(200, func() {
		_, _ = contract.RequestFrom(base)
		_ = g.chargeCost(base, w, nil, nil, 0)
	}); n != 0 {
		t.Errorf("looking for a budget that is not there allocates %v times", n)
	}
}

// BenchmarkServeBillsQueryCachedCostBudget is BenchmarkServeBillsQueryCached
// with a cost budget (one that allocates nothing) in the context.
func BenchmarkServeBillsQueryCachedCostBudget(b *testing.B) {
	g := provisioned(b, &Guard{})
	body := []byte(`{"query":` + jsonString(benchBillsQuery) + `,"variables":{"congress":118,"cursor":null},"operationName":"Bills"}`)
	ctx := withRequestValue(context.Background(), func(q *contract.Request) { q.SetCostBudget(allowAll{}) })
	next := &recordNext{}
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		if err := g.ServeHTTP(w, r, next); err != nil || w.Code != http.StatusNoContent {
			b.Fatalf("%d %v", w.Code, err)
		}
	}
}
