package gqlguard

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

const benchBillsQuery = `query Bills($congress: Int, $cursor: String) {
  bills(input: {congress: $congress, type: "hr", cursor: $cursor, limit: 50}) {
    items { id congress type number title introducedDate latestAction { date text } sponsors { bioguideId name party state } }
    nextCursor
  }
}`

func benchServe(b *testing.B, g *Guard, body []byte, wantStatus int) {
	b.Helper()
	next := &recordNext{}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		if err := g.ServeHTTP(w, r, next); err != nil {
			b.Fatal(err)
		}
		if w.Code != wantStatus {
			b.Fatalf("status %d: %s", w.Code, w.Body.String())
		}
	}
}

// The whole handler on a cache hit: decode the body, coerce variables,
// check limits, forward.
func BenchmarkServeBillsQueryCached(b *testing.B) {
	g := provisioned(b, &Guard{})
	body := []byte(`{"query":` + jsonString(benchBillsQuery) + `,"variables":{"congress":118,"cursor":null},"operationName":"Bills"}`)
	benchServe(b, g, body, http.StatusNoContent)
}

// The whole handler when every request carries a different variable value
// (the per-operation memo always misses): scalar variables and a static cost
// take the allocation-free check (variables_scalar.go).
func BenchmarkServeBillsQueryUniqueVariables(b *testing.B) {
	g := provisioned(b, &Guard{})
	next := &recordNext{}
	prefix := []byte(`{"query":` + jsonString(benchBillsQuery) + `,"variables":{"congress":`)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		body := strconv.AppendInt(append([]byte(nil), prefix...), int64(100+i%1_000_000), 10)
		body = append(body, `,"cursor":null},"operationName":"Bills"}`...)
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		if err := g.ServeHTTP(w, r, next); err != nil {
			b.Fatal(err)
		}
		if w.Code != http.StatusNoContent {
			b.Fatalf("status %d: %s", w.Code, w.Body.String())
		}
	}
}

// Hostile 100 KiB documents through the whole handler, cache disabled so
// every iteration pays the full price.
func BenchmarkHostile100KiB(b *testing.B) {
	const size = 100 << 10
	fill := func(prefix, unit, suffix string) string {
		n := (size - len(prefix) - len(suffix)) / len(unit)
		return prefix + strings.Repeat(unit, n) + suffix
	}
	for _, tc := range []struct{ name, query string }{
		{"alias_flood", fill("{ ", "a: __typename ", "}")},
		{"nested_braces", fill("", "{", "")},
		{"fragment_fanout", "{ ...F0 } " + fill("", "fragment F0 on Query { ...F0 ...F0 } ", "")},
		{"fragment_chain", "{ ...F0 } " + fragmentChain(size)},
	} {
		body := []byte(`{"query":` + jsonString(tc.query) + `}`)
		b.Run(tc.name, func(b *testing.B) {
			benchServe(b, provisioned(b, &Guard{CacheSize: -1}), body, http.StatusOK)
		})
		// measure_only lifts the token limit: the whole document is parsed,
		// validated and walked, which shows the rest of the path is linear too.
		b.Run(tc.name+"/measure_only", func(b *testing.B) {
			benchServe(b, provisioned(b, &Guard{CacheSize: -1, MeasureOnly: true}), body, http.StatusOK)
		})
	}
}

// fragmentChain writes fragments F0…Fn, each spreading the next twice (2^n
// expansions), filling about size bytes.
func fragmentChain(size int) string {
	var b strings.Builder
	for i := 0; b.Len() < size-64; i++ {
		fmt.Fprintf(&b, "fragment F%d on Query { ...F%d ...F%d } ", i, i+1, i+1)
	}
	return b.String()
}

// BenchmarkServeRefusals: the handler's early refusals (method, content
// type, entitlement), each a fixed body.
func BenchmarkServeRefusals(b *testing.B) {
	g := provisioned(b, &Guard{Families: map[string][]string{"bills": {"bills", "bill"}}})
	body := []byte(`{"query":` + jsonString(benchBillsQuery) + `}`)
	for _, tc := range []struct {
		name, method, ct string
		status           int
	}{
		{"method", http.MethodGet, "application/json", http.StatusMethodNotAllowed},
		{"content_type", http.MethodPost, "text/plain", http.StatusUnsupportedMediaType},
		{"not_entitled", http.MethodPost, "application/json", http.StatusForbidden},
	} {
		b.Run(tc.name, func(b *testing.B) {
			next := &recordNext{}
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(tc.method, "/", bytes.NewReader(body))
				r.Header.Set("Content-Type", tc.ct)
				repl := caddy.NewReplacer()
				repl.Set("civic.families", "members")
				r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
				w := httptest.NewRecorder()
				if err := g.ServeHTTP(w, r, next); err != nil {
					b.Fatal(err)
				}
				if w.Code != tc.status {
					b.Fatalf("status %d: %s", w.Code, w.Body.String())
				}
			}
		})
	}
}
