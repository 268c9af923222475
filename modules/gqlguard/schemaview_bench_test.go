package gqlguard

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// viewBenchGuard is a guard over the records schema with the families of
// rootattr_test.go (search in none: no view holds it), schema_view mode, the caller's families read from
// {test.families}.
func viewBenchGuard(t testing.TB, mode string) *Guard {
	return provisioned(t, &Guard{Families: recordsFamilies, SchemaView: mode, Entitlements: "{test.families}"})
}

// cachedBillsAs serves the cached bills query as a caller owning families.
func cachedBillsAs(t testing.TB, g *Guard, families string) func() {
	body := []byte(`{"query":` + jsonString(benchBillsQuery) + `,"variables":{"congress":118,"cursor":null},"operationName":"Bills"}`)
	repl := caddy.NewReplacer()
	repl.Set("test.families", families)
	ctx := context.WithValue(context.Background(), caddy.ReplacerCtxKey, repl)
	next := &recordNext{}
	return func() {
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		if err := g.ServeHTTP(w, r, next); err != nil {
			t.Fatal(err)
		}
		if w.Code != http.StatusNoContent {
			t.Fatalf("status %d: %s", w.Code, w.Body.String())
		}
	}
}

// TestSchemaViewAddsNoAllocations: validating against a caller's view costs
// nothing per request beyond choosing it (docs/design.md D67): a cached
// document allocates as much on an entitled route as on a full one.
func TestSchemaViewAddsNoAllocations(t *testing.T) {
	fullGuard, viewGuard := viewBenchGuard(t, SchemaViewFull), viewBenchGuard(t, SchemaViewEntitled)
	// The entitled route validates against the bills view: members is unknown
	// there, refused after validation (403) on the full route.
	members := `{"query":"{ members { items { bioguideId } } }"}`
	if w, _ := sendAs(t, fullGuard, "bills", members); w.Code != http.StatusForbidden {
		t.Fatalf("full route: %d %s", w.Code, w.Body.String())
	}
	if w, _ := sendAs(t, viewGuard, "bills", members); w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte("GRAPHQL_VALIDATION_FAILED")) {
		t.Fatalf("entitled route: %d %s", w.Code, w.Body.String())
	}
	serveFull := cachedBillsAs(t, fullGuard, "bills")
	serveView := cachedBillsAs(t, viewGuard, "bills")
	serveFull()
	serveView()
	full := testing.AllocsPerRun(200, serveFull)
	view := testing.AllocsPerRun(200, serveView)
	t.Logf("allocations per request: schema_view full %.0f, entitled %.0f", full, view)
	if view > full {
		t.Errorf("schema_view entitled allocates %.0f per request, full %.0f", view, full)
	}
}

// BenchmarkServeBillsQueryCachedView: the cached bills query of a caller
// owning bills, on a full route and on an entitled one (its view), in
// viewBenchRounds rounds of both whose order alternates, so that on a
// noisy machine the two halves meet the same load (compare them per round).
func BenchmarkServeBillsQueryCachedView(b *testing.B) {
	serve := map[string]func(){
		SchemaViewFull:     cachedBillsAs(b, viewBenchGuard(b, SchemaViewFull), "bills"),
		SchemaViewEntitled: cachedBillsAs(b, viewBenchGuard(b, SchemaViewEntitled), "bills"),
	}
	order := []string{SchemaViewFull, SchemaViewEntitled}
	for round := range viewBenchRounds {
		for i := range order {
			mode := order[(i+round)%len(order)]
			b.Run(mode, func(b *testing.B) {
				serve[mode]()
				b.ReportAllocs()
				for b.Loop() {
					serve[mode]()
				}
			})
		}
	}
}

// viewBenchRounds is how many rounds BenchmarkServeBillsQueryCachedView runs.
const viewBenchRounds = 8
