package gqlguard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A refused caller learns which families its tier lacks (docs/design.md
// D41): the 403 keeps the fixed body clients match on and says them in
// Civic-Refused-Family; the GraphQL-shaped refusals (application/
// graphql-response+json, a WebSocket error message) carry them as
// extensions.family beside the existing code. Before, nothing said which.

func TestRefusedFamilyHeader(t *testing.T) {
	s := startCaddy(t, libraryRoutes(t))
	const twoFamilies = `{ books { endCursor } loans(memberId: "m1") { id } }`
	for _, tc := range []struct {
		name    string
		headers map[string]string
		body    string
		status  int
		family  string // "" = no header
	}{
		{"mutation of loans, catalog owned", families("catalog"), q(borrowMutation), 403, "loans"},
		{"two families, none owned: both, in name order", families(""), q(twoFamilies), 403, "catalog,loans"},
		{"two families, catalog owned", families("catalog"), q(twoFamilies), 403, "loans"},
		{"a root field in no family: no tier owns it", families("catalog,loans"), q(returnMutation), 403, ""},
		{"subscription over an event stream", map[string]string{"X-Families": "catalog", "Accept": "text/event-stream"}, q(loanEventsSub), 403, "loans"},
		{"entitled", families("catalog,loans"), q(borrowMutation), 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := s.do(t, call{path: "/lib", headers: tc.headers, body: tc.body})
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d %s, want %d", resp.StatusCode, body, tc.status)
			}
			if tc.status == 403 && body != bodyNotEntitled {
				t.Fatalf("body %s, want the fixed %s", body, bodyNotEntitled)
			}
			got, present := resp.Header[http.CanonicalHeaderKey("Civic-Refused-Family")]
			if tc.family == "" && present || tc.family != "" && (len(got) != 1 || got[0] != tc.family) {
				t.Fatalf("Civic-Refused-Family %q (present %v), want %q", got, present, tc.family)
			}
		})
	}

	// application/graphql-response+json: the same status and header, the family in extensions.
	h := families("")
	h["Accept"] = mediaGraphQLResponse
	resp, body := s.do(t, call{path: "/lib", headers: h, body: q(twoFamilies)})
	want := `{"errors":[{"message":"Tier not entitled to this endpoint family","extensions":{"code":"NOT_ENTITLED","family":"catalog,loans"}}]}`
	if resp.StatusCode != 403 || body != want || resp.Header.Get("Civic-Refused-Family") != "catalog,loans" {
		t.Fatalf("graphql-response+json: %d %s (header %q)\nwant 403 %s", resp.StatusCode, body, resp.Header.Get("Civic-Refused-Family"), want)
	}
	h = families("catalog,loans")
	h["Accept"] = mediaGraphQLResponse
	resp, body = s.do(t, call{path: "/lib", headers: h, body: q(returnMutation)})
	if want := `{"errors":[{"message":"Tier not entitled to this endpoint family","extensions":{"code":"NOT_ENTITLED"}}]}`; resp.StatusCode != 403 || body != want {
		t.Fatalf("graphql-response+json, field in no family: %d %s, want 403 %s", resp.StatusCode, body, want)
	}
}

func TestRefusedFamilyWebSocket(t *testing.T) {
	up := &wsUpstream{}
	upstream := httptest.NewServer(http.HandlerFunc(up.serve))
	t.Cleanup(upstream.Close)
	s := startCaddy(t, fmt.Sprintf(`
	route /ws {
		graphql_guard {
			schema %s
			entitlements {http.request.header.X-Families}%s
		}
		reverse_proxy %s
	}`, testdataPath(t, "library.graphqls"), libraryFamilies, upstream.Listener.Addr().String()))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	exchange := dialWS(t, ctx, s.base, http.Header{"X-Families": {"catalog"}}).exchange
	if ack := exchange(wsMessage{Type: "connection_init"}); ack.Type != "connection_ack" {
		t.Fatalf("connection_init: %+v", ack)
	}
	reply := exchange(wsMessage{Type: "subscribe", ID: "1", Payload: json.RawMessage(q(loanEventsSub))})
	want := `[{"message":"Tier not entitled to this endpoint family","extensions":{"code":"NOT_ENTITLED","family":"loans"}}]`
	if reply.Type != "error" || reply.ID != "1" || string(reply.Payload) != want {
		t.Fatalf("refused subscribe: %s %s %s, want error 1 %s", reply.Type, reply.ID, reply.Payload, want)
	}
	if got := up.subscribed(); len(got) != 0 {
		t.Fatalf("the upstream received %v", got)
	}
}
