package gqlguard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// viewGuard is a guard over testdata/library.graphqls with schema_view
// entitled, the caller's families read from {test.families}.
func viewGuard(t *testing.T, introspection bool) (*Guard, caddy.Context) {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	g := &Guard{
		Schema:        "testdata/library.graphqls",
		Families:      map[string][]string{"catalog": {"books", "book"}, "loans": {"loans", "Mutation.borrowBook", "Subscription.loanEvents"}},
		SchemaView:    SchemaViewEntitled,
		Entitlements:  "{test.families}",
		Introspection: &introspection,
	}
	if err := g.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	return g, ctx
}

// sendAs runs one POST through g as a caller owning families; it returns
// the answer and whether the next handler (the backend) was reached.
func sendAs(t *testing.T, g *Guard, families, body string) (*httptest.ResponseRecorder, bool) {
	t.Helper()
	repl := caddy.NewReplacer()
	repl.Set("test.families", families)
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
	w := httptest.NewRecorder()
	next := &recordNext{}
	if err := g.ServeHTTP(w, r, next); err != nil {
		t.Fatal(err)
	}
	return w, next.body != nil
}

// TestIntrospectionOutcomes: an introspection answered from the view and a
// mixed one are counted under their own outcomes (docs/design.md D68), and
// neither reaches the backend.
func TestIntrospectionOutcomes(t *testing.T) {
	g, ctx := viewGuard(t, true)
	reg := ctx.GetMetricsRegistry()
	const name = "civicgate_graphql_guard_requests_total"
	answered0 := counterValue(t, reg, name, "outcome", outcomeIntrospectionAnswered)
	mixed0 := counterValue(t, reg, name, "outcome", outcomeIntrospectionMixed)

	w, forwarded := sendAs(t, g, "catalog", `{"query":"{ __type(name: \"Book\") { name } }"}`)
	if forwarded || w.Code != 200 || w.Body.String() != `{"data":{"__type":{"name":"Book"}}}` {
		t.Fatalf("answer: forwarded %v, %d %s", forwarded, w.Code, w.Body)
	}
	w, forwarded = sendAs(t, g, "catalog", `{"query":"{ __type(name: \"Book\") { name } loans(memberId: \"m1\") { id } }"}`)
	if forwarded || !strings.Contains(w.Body.String(), `"code":"INTROSPECTION_MIXED"`) {
		t.Fatalf("mixed: forwarded %v, %d %s", forwarded, w.Code, w.Body)
	}
	if got := counterValue(t, reg, name, "outcome", outcomeIntrospectionAnswered) - answered0; got != 1 {
		t.Errorf("introspection_answered +%v, want +1", got)
	}
	if got := counterValue(t, reg, name, "outcome", outcomeIntrospectionMixed) - mixed0; got != 1 {
		t.Errorf("introspection_mixed +%v, want +1", got)
	}

	// A data operation of the view is forwarded as before.
	if _, forwarded := sendAs(t, g, "catalog", `{"query":"{ books { endCursor } }"}`); !forwarded {
		t.Error("a query of the view was not forwarded")
	}
}

// TestIntrospectionOffRefusesAsBefore: with introspection off nothing is
// answered from the view and mixing is not singled out.
func TestIntrospectionOffRefusesAsBefore(t *testing.T) {
	g, _ := viewGuard(t, false)
	w, forwarded := sendAs(t, g, "catalog", `{"query":"{ __type(name: \"Book\") { name } }"}`)
	if forwarded || !strings.Contains(w.Body.String(), `"code":"INTROSPECTION_DISABLED"`) {
		t.Fatalf("forwarded %v, %d %s", forwarded, w.Code, w.Body)
	}
	w, _ = sendAs(t, g, "catalog", `{"query":"{ __type(name: \"Book\") { name } loans(memberId: \"m1\") { id } }"}`)
	if !strings.Contains(w.Body.String(), `"code":"GRAPHQL_VALIDATION_FAILED"`) {
		t.Fatalf("mixed, introspection off: %d %s", w.Code, w.Body)
	}
}

// TestIntrospectionOverWebSocketRefused: a subscribe message whose document
// is introspection, on a view route, is refused as before
// (INTROSPECTION_DISABLED): the guard answers introspection over plain HTTP
// only (docs/design.md D68), and the upstream never sees it.
func TestIntrospectionOverWebSocketRefused(t *testing.T) {
	up := &wsUpstream{}
	upstream := httptest.NewServer(http.HandlerFunc(up.serve))
	t.Cleanup(upstream.Close)
	s := startCaddy(t, fmt.Sprintf(`
	route /ws {
		graphql_guard {
			schema %s
			entitlements {http.request.header.X-Families}%s
			schema_view entitled
		}
		reverse_proxy %s
	}`, testdataPath(t, "library.graphqls"), libraryFamilies, upstream.Listener.Addr().String()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := dialWS(t, ctx, s.base, http.Header{"X-Families": {"catalog"}})
	if reply := c.exchange(wsMessage{Type: "connection_init"}); reply.Type != "connection_ack" {
		t.Fatalf("init: %+v", reply)
	}
	reply := c.exchange(wsMessage{Type: "subscribe", ID: "1", Payload: json.RawMessage(q(`{ __type(name: "Book") { name } }`))})
	if reply.Type != "error" || reply.ID != "1" || !strings.Contains(string(reply.Payload), `"code":"INTROSPECTION_DISABLED"`) {
		t.Fatalf("subscribe: %+v %s", reply, reply.Payload)
	}
	if got := up.subscribed(); slices.Contains(got, "1") {
		t.Fatalf("the upstream saw the introspection: %v", got)
	}
}

func TestNamesWord(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{`{ __typename books { __typename } }`, false},
		{`{ __type(name: "A") { name } }`, true},
		{`{ __typename __type (name: "A") { name } }`, true},
		{`{ x: __type`, true},
		{`{ __types }`, false},
	} {
		if got := namesWord(c.text, "__type"); got != c.want {
			t.Errorf("%s: %v", c.text, got)
		}
	}
}
