package gqlguard

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// deprecatedUpstream is a GraphQL backend answering every request with the
// same body and headers of its own (a Link among them), so a test sees
// which headers the gateway adds and that the body is the upstream's.
const deprecatedUpstreamBody = `{"data":{"books":[]}}`

func startDeprecatedUpstream(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Link", `<https://upstream.example/next>; rel="next"`)
		w.Header().Set("X-Upstream", "1")
		_, _ = w.Write([]byte(deprecatedUpstreamBody))
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestDeprecationHeadersThroughProxy(t *testing.T) {
	addr := startDeprecatedUpstream(t)
	s := startCaddy(t, fmt.Sprintf(`
	route /dep {
		graphql_guard {
			schema %s
			methods GET POST
			deprecations {
				Query.oldBooks since 2025-06-01T00:00:00Z sunset 2026-12-31T00:00:00Z link https://docs.example/migrate#oldBooks
				BookOrder.TITLE since 2025-09-01T00:00:00Z link https://docs.example/order
			}
		}
		reverse_proxy %s
	}`, testdataPath(t, "deprecated.graphqls"), addr))

	const (
		since    = "@1748736000" // 2025-06-01T00:00:00Z
		sunset   = "Thu, 31 Dec 2026 00:00:00 GMT"
		oldLink  = `<https://docs.example/migrate#oldBooks>; rel="deprecation"`
		upLink   = `<https://upstream.example/next>; rel="next"`
		sinceSep = "@1756684800" // 2025-09-01T00:00:00Z
	)
	for _, tc := range []struct {
		name                      string
		get                       bool
		query                     string
		deprecation, sunset, link string // "": the header is absent; link: ours, beside the upstream's
		loadedSince               bool   // Deprecation is the schema's first load
	}{
		{name: "nothing deprecated", query: `{ books(first: 2) { id title } }`},
		{name: "field", query: `{ oldBooks { id } }`, deprecation: since, sunset: sunset, link: oldLink},
		{name: "field over GET", get: true, query: `{ oldBooks { id } }`, deprecation: since, sunset: sunset, link: oldLink},
		{name: "enum value", query: `{ books(order: TITLE) { id } }`, deprecation: sinceSep, link: `<https://docs.example/order>; rel="deprecation"`},
		{name: "earliest since, earliest sunset, every link", query: `{ books(order: TITLE) { id } oldBooks { id } }`,
			deprecation: since, sunset: sunset, link: `<https://docs.example/migrate#oldBooks>; rel="deprecation", <https://docs.example/order>; rel="deprecation"`},
		{name: "argument without a configured date", query: `{ books(limit: 3) { id } }`, loadedSince: true},
		{name: "input field without a configured date", query: `{ books(filter: {name: "x"}) { id } }`, loadedSince: true},
		{name: "a variable's value is never inspected", query: `query($o: BookOrder) { books(order: $o) { id } }`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := call{path: "/dep", body: q(tc.query)}
			if tc.get {
				c = call{method: http.MethodGet, path: "/dep?query=" + url.QueryEscape(tc.query), ctype: "-"}
			}
			resp, body := s.do(t, c)
			if resp.StatusCode != 200 || body != deprecatedUpstreamBody {
				t.Fatalf("got %d %s, want the upstream's answer", resp.StatusCode, body)
			}
			if resp.Header.Get("X-Upstream") != "1" {
				t.Errorf("the upstream's headers were lost: %v", resp.Header)
			}
			dep := resp.Header.Values("Deprecation")
			switch {
			case tc.loadedSince:
				if len(dep) != 1 || !strings.HasPrefix(dep[0], "@") {
					t.Fatalf("Deprecation = %q, want the first load's date", dep)
				}
				// The moment this process first loaded a schema marking the
				// coordinate (another test may have loaded it first).
				first, ok := firstDeprecated.Load("Query.books(limit:)")
				secs, err := strconv.ParseInt(dep[0][1:], 10, 64)
				if !ok || err != nil || secs != first.(time.Time).Unix() || secs > time.Now().Unix() {
					t.Errorf("Deprecation = %q, want the first load's date %v", dep, first)
				}
			case tc.deprecation == "":
				if len(dep) != 0 {
					t.Errorf("Deprecation = %q on an operation using nothing deprecated", dep)
				}
			default:
				if len(dep) != 1 || dep[0] != tc.deprecation {
					t.Errorf("Deprecation = %q, want %q", dep, tc.deprecation)
				}
			}
			if got := resp.Header.Values("Sunset"); strings.Join(got, "|") != tc.sunset {
				t.Errorf("Sunset = %q, want %q", got, tc.sunset)
			}
			wantLinks := []string{upLink}
			if tc.link != "" {
				wantLinks = []string{tc.link, upLink}
			}
			if got := resp.Header.Values("Link"); strings.Join(got, "|") != strings.Join(wantLinks, "|") {
				t.Errorf("Link = %q, want %q", got, wantLinks)
			}
		})
	}

	// A refused operation carries no deprecation: only admitted ones do.
	resp, _ := s.do(t, call{path: "/dep", body: q(`{ oldBooks { nope } }`)})
	if resp.Header.Get("Deprecation") != "" {
		t.Errorf("a refused document carries Deprecation %q", resp.Header.Get("Deprecation"))
	}
}
