package e2e

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// TestNPMClientsWithKeys: the npm GraphQL clients teams already have, with
// an API key in Authorization: Bearer (docs/api.md "Clients"), against the
// built gateway — Apollo Client on the records API (/v1/graphql over HTTPS)
// and on the library engine's site with APQ; urql, graphql-ws and
// graphql-sse on the library site (queries, mutations, subscriptions). Every
// result is compared with what a Go request of the same operation returns.
func TestNPMClientsWithKeys(t *testing.T) {
	t.Parallel()
	dir := npmClients(t)
	n := startNPMStack(t)
	s := n.s
	records := s.HTTPSURL + "/v1/graphql"
	free, _ := n.issue(t, "free")
	paid, _ := n.issue(t, "paid_beta")
	lib, _ := n.issue(t, "npmlib")
	catalog, _ := n.issue(t, "npmcatalog")

	t.Run("Apollo Client on the records API", func(t *testing.T) {
		const bills = `query Bills($n: Int!) { bills(input: {limit: $n}) { items { id congress officialTitle } nextCursor } }`
		const filings = `query Filings { regulatoryFilings(input: {limit: 2}) { items { id } nextCursor } }`
		vars := map[string]any{"n": 3}
		r := runApollo(t, dir, s.CARoot, records, paid,
			apolloOp{Query: bills, Variables: vars},
			apolloOp{Query: filings})
		wantApolloData(t, "bills", r[0], s.Client, records, paid, vars)
		wantApolloData(t, "regulatoryFilings", r[1], s.Client, records, paid, nil)

		// Refusals surface as Apollo's ServerError with the documented
		// status and body (docs/api.md "Errors").
		r = runApollo(t, dir, s.CARoot, records, "", apolloOp{Query: bills, Variables: vars})
		wantClientError(t, "no key", r[0].Error, http.StatusUnauthorized, `{"error":"Missing bearer token"}`)
		r = runApollo(t, dir, s.CARoot, records, free, apolloOp{Query: filings})
		wantNotEntitled(t, "free tier, regulatoryFilings", r[0].Error, "regulatory_filings")

		// APQ: /v1/graphql has no persisted_queries, so a hash alone is
		// answered 200 PersistedQueryNotSupported (docs/design.md D23);
		// Apollo stops hashing and sends the text, without extensions.
		r = runApollo(t, dir, s.CARoot, records, paid, apolloOp{Query: bills, Variables: vars, APQ: "POST"})
		if got := shapes(r[0].Exchanges); !reflect.DeepEqual(got, []exchangeShape{{"POST", false, true, 200}, {"POST", true, false, 200}}) {
			t.Errorf("APQ on /v1/graphql: exchanges %+v", got)
		}
		wantApolloData(t, "bills by APQ", r[0], s.Client, records, paid, vars)
		// /v1/graphql is POST-only: Apollo's hashed GET meets the 405,
		// GraphQL-shaped for its Accept, which it surfaces as GraphQL errors
		// instead of falling back to POST.
		r = runApollo(t, dir, s.CARoot, records, paid, apolloOp{Query: bills, Variables: vars, APQ: "GET"})
		if e := r[0].Error; e == nil || e.Name != "CombinedGraphQLErrors" || len(e.Errors) != 1 ||
			!sameJSON(e.Errors[0], []byte(`{"message":"Method not allowed: use POST","extensions":{"code":"METHOD_NOT_ALLOWED"}}`)) {
			t.Errorf("APQ by GET on /v1/graphql: the client surfaced %s", describe(e))
		}
		if got := shapes(r[0].Exchanges); !reflect.DeepEqual(got, []exchangeShape{{"GET", false, true, 405}}) {
			t.Errorf("APQ by GET on /v1/graphql: exchanges %+v", got)
		}
	})

	t.Run("Apollo Client APQ on the library site", func(t *testing.T) {
		const books = `query Books($n: Int) { books(first: $n) { nodes { id title author { name } } endCursor } }`
		const authors = `query Authors { authors(first: 2) { id name } }`
		vars := map[string]any{"n": 2}
		r := runApollo(t, dir, "", n.libURL, lib,
			apolloOp{Query: books, Variables: vars, APQ: "GET"},
			apolloOp{Query: books, Variables: vars, APQ: "GET"},
			apolloOp{Query: authors, APQ: "POST"},
			apolloOp{Query: authors, APQ: "POST"})
		for i, want := range [][]exchangeShape{
			// The hash first; PERSISTED_QUERY_NOT_FOUND (200); the full
			// text with the hash, which registers it.
			{{"GET", false, true, 200}, {"POST", true, true, 200}},
			// Known now: the hash alone is served.
			{{"GET", false, true, 200}},
			{{"POST", false, true, 200}, {"POST", true, true, 200}},
			{{"POST", false, true, 200}},
		} {
			if got := shapes(r[i].Exchanges); !reflect.DeepEqual(got, want) {
				t.Errorf("operation %d: exchanges %+v, want %+v", i, got, want)
			}
		}
		wantApolloData(t, "books", r[0], http.DefaultClient, n.libURL, lib, vars)
		wantApolloData(t, "authors", r[2], http.DefaultClient, n.libURL, lib, nil)
		for _, i := range []int{1, 3} {
			if !sameJSON(r[i].Data, r[i-1].Data) {
				t.Errorf("operation %d by hash: %s, by text %s", i, r[i].Data, r[i-1].Data)
			}
		}
	})

	t.Run("urql query, mutation and subscription", func(t *testing.T) {
		cfg := map[string]any{
			"url": n.libURL, "wsUrl": n.libWS,
			"query":             `query Book($id: ID!) { book(id: $id) { id title author { id name } } }`,
			"variables":         map[string]any{"id": "b2"},
			"mutation":          `mutation Borrow($b: ID!) { borrowBook(bookId: $b) { id memberId returned book { id title } } }`,
			"mutationVariables": map[string]any{"b": "b2"},
			"subscription":      loanEventsDoc,
			"count":             4,
		}
		run := startNPMScript(t, dir, "", "urql.mjs", lib, cfg)
		awaitSubscribers(t, n.events, 1)
		want := lendAndReturn(t, n.libURL, lib, "b3", 4)
		var out struct {
			Query, Mutation struct {
				Data  json.RawMessage `json:"data"`
				Error *clientError    `json:"error"`
			}
			SubscriptionError *clientError `json:"subscriptionError"`
			Events            []struct {
				LoanEvents loanEvent `json:"loanEvents"`
			} `json:"events"`
		}
		raw := run.wait(t, &out)
		st, q := postGraphQL(t, http.DefaultClient, n.libURL, lib, cfg["query"].(string), cfg["variables"].(map[string]any))
		if out.Query.Error != nil || st != http.StatusOK || !sameJSON(out.Query.Data, q.Data) {
			t.Errorf("urql query: %s\nthe Go request's %d %s", raw, st, q.Data)
		}
		var borrowed struct {
			BorrowBook struct {
				ID, MemberID string
				Returned     bool
				Book         struct{ ID, Title string }
			}
		}
		if out.Mutation.Error != nil || json.Unmarshal(out.Mutation.Data, &borrowed) != nil ||
			borrowed.BorrowBook.ID == "" || borrowed.BorrowBook.MemberID != "m1" || borrowed.BorrowBook.Returned ||
			borrowed.BorrowBook.Book.ID != "b2" || borrowed.BorrowBook.Book.Title != "Silas Marner" {
			t.Errorf("urql mutation: %s", raw)
		}
		// The loan urql made is the engine's: a Go query of m1's loans has it.
		_, loans := postGraphQL(t, http.DefaultClient, n.libURL, lib, `{ loans(memberId: "m1") { id book { id } returned } }`, nil)
		if !strings.Contains(string(loans.Data), `"id":"`+borrowed.BorrowBook.ID+`","book":{"id":"b2"},"returned":false`) {
			t.Errorf("m1's loans %s lack urql's loan %s", loans.Data, borrowed.BorrowBook.ID)
		}
		var got []loanEvent
		for _, e := range out.Events {
			got = append(got, e.LoanEvents)
		}
		if out.SubscriptionError != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("urql subscription: %s\nwant events %+v", raw, want)
		}
		awaitSubscribers(t, n.events, 0)
	})

	t.Run("graphql-ws: events in order, complete", func(t *testing.T) {
		run := startNPMScript(t, dir, "", "graphql-ws.mjs", lib, map[string]any{"url": n.libWS, "query": loanEventsDoc, "count": 5})
		awaitSubscribers(t, n.events, 1)
		want := lendAndReturn(t, n.libURL, lib, "b4", 5)
		var out wsOutput
		raw := run.wait(t, &out)
		if !out.Acknowledged || out.Error != nil || !reflect.DeepEqual(out.loanEvents(), want) {
			t.Errorf("graphql-ws: %s\nwant events %+v", raw, want)
		}
		if out.Closed == nil || out.Closed.Code != 1000 {
			t.Errorf("graphql-ws: the client's close %+v, want 1000", out.Closed)
		}
		// The client's complete reached the engine: its subscription ended.
		awaitSubscribers(t, n.events, 0)
	})

	t.Run("graphql-ws: a family outside the tier is an error message", func(t *testing.T) {
		var out wsOutput
		raw := runNPMScript(t, dir, "", "graphql-ws.mjs", catalog, map[string]any{"url": n.libWS, "query": loanEventsDoc, "count": 1}, &out)
		if !out.Acknowledged || out.Error == nil || out.Error.Name != "GraphQLErrors" || len(out.Error.Errors) != 1 ||
			!sameJSON(out.Error.Errors[0], []byte(`{"message":"Tier not entitled to this endpoint family","extensions":{"code":"NOT_ENTITLED","family":"loans"}}`)) {
			t.Errorf("graphql-ws, catalog tier, loanEvents: %s", raw)
		}
		if out.Closed == nil || out.Closed.Code != 1000 {
			t.Errorf("graphql-ws refusal: the socket closed %+v, want by the client (1000) after the error message", out.Closed)
		}
		if n.events.Subscribers() != 0 {
			t.Errorf("the refused subscription reached the engine")
		}
	})

	t.Run("graphql-ws: the key revoked closes 4403", func(t *testing.T) {
		doomed, id := n.issue(t, "npmlib")
		run := startNPMScript(t, dir, "", "graphql-ws.mjs", doomed, map[string]any{"url": n.libWS, "query": loanEventsDoc, "count": 100})
		awaitSubscribers(t, n.events, 1)
		s.Run(bins.Civicgate, "keys", "revoke", id)
		var out wsOutput
		raw := run.wait(t, &out)
		if out.Error == nil || out.Error.Name != "CloseEvent" || out.Error.Code != 4403 || out.Error.Reason != "API key revoked" {
			t.Errorf("graphql-ws, key revoked: %s", raw)
		}
		awaitSubscribers(t, n.events, 0)
	})

	t.Run("graphql-sse distinct connections", func(t *testing.T) {
		run := startNPMScript(t, dir, "", "graphql-sse.mjs", lib, map[string]any{"url": n.libURL, "query": loanEventsDoc, "count": 4})
		awaitSubscribers(t, n.events, 1)
		want := lendAndReturn(t, n.libURL, lib, "b1", 4)
		var out wsOutput
		raw := run.wait(t, &out)
		if out.Error != nil || !reflect.DeepEqual(out.loanEvents(), want) {
			t.Errorf("graphql-sse: %s\nwant events %+v", raw, want)
		}
		awaitSubscribers(t, n.events, 0)
	})

	t.Run("graphql-sse: a family outside the tier", func(t *testing.T) {
		var out wsOutput
		raw := runNPMScript(t, dir, "", "graphql-sse.mjs", catalog, map[string]any{"url": n.libURL, "query": loanEventsDoc, "count": 1}, &out)
		if out.Error == nil || out.Error.Name != "NetworkError" || out.Error.StatusCode != http.StatusForbidden || len(out.Events) != 0 {
			t.Errorf("graphql-sse, catalog tier, loanEvents: %s", raw)
		}
		if n.events.Subscribers() != 0 {
			t.Errorf("the refused subscription reached the engine")
		}
	})

	t.Run("graphql-sse: the key revoked ends the stream", func(t *testing.T) {
		doomed, id := n.issue(t, "npmlib")
		run := startNPMScript(t, dir, "", "graphql-sse.mjs", doomed, map[string]any{"url": n.libURL, "query": loanEventsDoc, "count": 100})
		awaitSubscribers(t, n.events, 1)
		s.Run(bins.Civicgate, "keys", "revoke", id)
		var out wsOutput
		raw := run.wait(t, &out)
		// The gateway cuts the stream (docs/caddyfile.md "Subscriptions")
		// without an event saying why: the client sees a network error
		// (undici's fetch: "terminated"), not the reason a socket gets.
		if out.Error == nil || out.Error.Name != "NetworkError" || len(out.Events) != 0 {
			t.Errorf("graphql-sse, key revoked: %s", raw)
		}
		t.Logf("graphql-sse, key revoked: the client surfaced %s", describe(out.Error))
		awaitSubscribers(t, n.events, 0)
	})
}

// wsOutput is what graphql-ws.mjs and graphql-sse.mjs print.
type wsOutput struct {
	Acknowledged bool `json:"acknowledged"`
	Events       []struct {
		Data struct {
			LoanEvents loanEvent `json:"loanEvents"`
		} `json:"data"`
		Errors []json.RawMessage `json:"errors"`
	} `json:"events"`
	Error  *clientError `json:"error"`
	Closed *struct {
		Code   int    `json:"code"`
		Reason string `json:"reason"`
	} `json:"closed"`
}

func (o wsOutput) loanEvents() []loanEvent {
	var out []loanEvent
	for _, e := range o.Events {
		if len(e.Errors) != 0 {
			return nil
		}
		out = append(out, e.Data.LoanEvents)
	}
	return out
}

// wantNotEntitled fails unless a client surfaced the GraphQL-shaped 403 of
// a family the tier lacks (docs/api.md "GraphQL errors"): Apollo reads the
// application/graphql-response+json body as GraphQL errors.
func wantNotEntitled(t *testing.T, what string, e *clientError, family string) {
	t.Helper()
	want := `{"message":"Tier not entitled to this endpoint family","extensions":{"code":"NOT_ENTITLED","family":"` + family + `"}}`
	if e == nil || e.Name != "CombinedGraphQLErrors" || len(e.Errors) != 1 || !sameJSON(e.Errors[0], []byte(want)) {
		t.Errorf("%s: the client surfaced %s, want the GraphQL error %s", what, describe(e), want)
	}
}

// describe prints a surfaced error with its GraphQL errors as text.
func describe(e *clientError) string {
	b, _ := json.Marshal(e)
	return string(b)
}

// wantClientError fails unless a client surfaced an HTTP failure with
// status and exactly body.
func wantClientError(t *testing.T, what string, e *clientError, status int, body string) {
	t.Helper()
	if e == nil || e.StatusCode != status || !sameJSON([]byte(e.BodyText), []byte(body)) {
		t.Errorf("%s: the client surfaced %s, want status %d and body %s", what, describe(e), status, body)
	}
}
