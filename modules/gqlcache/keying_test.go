package gqlcache

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// The cache behind the real graphql_guard (`methods GET POST`), keyed by the
// request the guard decoded (docs/design.md D40). The upstream echoes the
// request URI and body it received, so an answer shows which request it was
// computed for.

// startGuarded runs Caddy with graphql_guard (the library schema, GET and
// POST), graphql_cache and the upstream on one route.
func startGuarded(t *testing.T) *gateway {
	t.Helper()
	up := newUpstream(t)
	port := testenv.FreePort(t)
	schema, err := filepath.Abs(filepath.Join("..", "gqlguard", "testdata", "library.graphqls"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{
	skip_install_trust
	admin localhost:%d
	http_port %d
	grace_period 1ns
	auto_https off
}
http://localhost:%d {
	route {
		graphql_guard {
			schema %s
			methods GET POST
			operations query
		}
		graphql_cache
		reverse_proxy %s
	}
}
`, adminPort, port, port, schema, up.srv.Listener.Addr())
	tester := caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort, TestRequestTimeout: 20 * time.Second})
	tester.InitServer(cfg, "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	liveInstance(t).store.flush()
	return &gateway{cfg: cfg, tester: tester, base: fmt.Sprintf("http://localhost:%d", port), up: up}
}

// booksQuery takes the number of books from $n (1 unless the variables say).
const booksQuery = `query B($n: Int = 1) { books(first: $n) { nodes { title } } }`

// getRaw sends GET / with rawQuery exactly as written (nothing re-encoded).
func (g *gateway) getRaw(t *testing.T, rawQuery string, hdr ...string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, g.base+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL.RawQuery = rawQuery
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return g.do(t, req)
}

func (g *gateway) post(t *testing.T, rawQuery, body string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.base+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.URL.RawQuery = rawQuery
	req.Header.Set("Content-Type", "application/json")
	return g.do(t, req)
}

const (
	csAliased = "civicgate; fwd=bypass; detail=aliased"
	csStored  = "civicgate; fwd=miss; stored"
	csHit     = "civicgate; hit; ttl=60"
)

// TestEncodedParameterNameNeverSharesAnEntry: `vari%61bles` is `variables`
// to the guard and the upstream; a request spelling a GraphQL parameter so
// (or in any spelling a lenient reader could take for one) is forwarded
// without touching the cache, even with Cache-Control: no-cache, so its
// answer is never served for the plain `?query=Q`.
func TestEncodedParameterNameNeverSharesAnEntry(t *testing.T) {
	g := startGuarded(t)
	honest := "query=" + url.QueryEscape(booksQuery)
	evil := url.QueryEscape(`{"n":4}`)
	// Percent-encoded exact names are served, never from or into the cache.
	attacks := []string{
		honest + "&vari%61bles=" + evil,
		honest + "&%76ariables=" + evil,
		honest + "&operation%4Eame=B",
		honest + "&ext%65nsions=" + url.QueryEscape(`{"a":1}`),
		"qu%65ry=" + url.QueryEscape(booksQuery),
	}
	for _, attack := range attacks {
		for _, cc := range []string{"", "no-cache"} {
			a := g.getRaw(t, attack, "Cache-Control", cc)
			if a.status != 200 || a.cacheStatus != csAliased {
				t.Fatalf("%s (Cache-Control %q): %+v, want 200 %q", attack, cc, a, csAliased)
			}
		}
	}
	// Another spelling of a GraphQL name (case, white space, a "[…]" or NUL
	// suffix) is refused by the guard before the cache (docs/design.md D64).
	for _, attack := range []string{
		honest + "&Variables=" + evil,
		honest + "&VARIABLES=" + evil,
		honest + "&variables%5B%5D=" + evil,
		honest + "&variables[]=" + evil,
		honest + "&variables%00=" + evil,
		honest + "&+variables=" + evil,
		honest + "&variables+=" + evil,
		honest + "&%20variables%20=" + evil,
	} {
		for _, cc := range []string{"", "no-cache"} {
			a := g.getRaw(t, attack, "Cache-Control", cc)
			if a.status != 400 || !strings.Contains(a.body, `must be spelled \"variables\"`) || a.cacheStatus != "" {
				t.Fatalf("%s (Cache-Control %q): %+v, want the guard's 400", attack, cc, a)
			}
		}
	}
	first := g.getRaw(t, honest)
	if first.cacheStatus != csStored || !strings.Contains(first.body, `"path":"/?`+honest+`"`) {
		t.Fatalf("?query=Q after the attacks: %+v, want its own answer stored", first)
	}
	if again := g.getRaw(t, honest); again.cacheStatus != csHit || again.body != first.body {
		t.Fatalf("?query=Q repeated: %+v", again)
	}
	// The entry stands: an attack sent after it does not replace it.
	g.getRaw(t, attacks[0], "Cache-Control", "no-cache")
	if again := g.getRaw(t, honest); again.cacheStatus != csHit || again.body != first.body {
		t.Fatalf("?query=Q after a no-cache attack: %+v", again)
	}
	// The correctly spelled variables are another entry, of their own answer.
	withVars := g.getRaw(t, honest+"&variables="+evil)
	if withVars.cacheStatus != csStored || !strings.Contains(withVars.body, "variables=") {
		t.Fatalf("?query=Q&variables=…: %+v", withVars)
	}

	// POST: a GraphQL parameter in the URL, or a member name written with
	// JSON escapes, is bypassed too; another spelling in the URL is refused.
	body := `{"query":` + jsonQuote(booksQuery) + `}`
	if a := g.post(t, "Query=x", body); a.status != 400 || a.cacheStatus != "" {
		t.Fatalf("POST ?Query=x: %+v, want the guard's 400", a)
	}
	for _, c := range []struct{ rawQuery, body string }{
		{"variables=" + evil, body},
		{"a=1;variables=" + evil, body},
		{"", `{"query":` + jsonQuote(booksQuery) + `,"vari\u0061bles":{"n":4}}`},
	} {
		if a := g.post(t, c.rawQuery, c.body); a.status != 200 || a.cacheStatus != csAliased {
			t.Fatalf("POST ?%s %s: %+v, want 200 %q", c.rawQuery, c.body, a, csAliased)
		}
	}
	if a := g.post(t, "trace=1", body); a.cacheStatus != csStored {
		t.Fatalf("POST with an unrelated URL parameter: %+v, want it stored", a)
	}
}

// TestDuplicateParameters: a GraphQL parameter given twice once decoded is
// refused by the guard (400, never cached), and so is one in another
// spelling beside it (Variables, variables).
func TestDuplicateParameters(t *testing.T) {
	g := startGuarded(t)
	q := "query=" + url.QueryEscape(booksQuery)
	a, b := url.QueryEscape(`{"n":1}`), url.QueryEscape(`{"n":4}`)
	for _, raw := range []string{q + "&variables=" + a + "&variables=" + b, q + "&variables=" + a + "&vari%61bles=" + b} {
		r := g.getRaw(t, raw)
		if r.status != 400 || r.body != `{"errors":[{"message":"Request URL query has \"variables\" more than once"}]}` || r.cacheStatus != "" {
			t.Fatalf("%s: %+v, want the guard's 400", raw, r)
		}
	}
	if r := g.getRaw(t, q+"&Variables="+b+"&variables="+a); r.status != 400 || r.cacheStatus != "" {
		t.Fatalf("Variables and variables: %+v, want the guard's 400 (docs/design.md D64)", r)
	}
	if r := g.getRaw(t, q+"&variables="+a); r.cacheStatus != csStored || strings.Contains(r.body, "Variables") {
		t.Fatalf("variables alone after the duplicate: %+v, want its own answer stored", r)
	}
	dup := `{"query":` + jsonQuote(booksQuery) + `,"variables":{"n":1},"variables":{"n":4}}`
	if r := g.post(t, "", dup); r.status != 400 || r.cacheStatus != "" {
		t.Fatalf("POST with variables twice: %+v, want the guard's 400", r)
	}
}

// TestExtensionsAreKeyed: two requests that differ only in extensions
// (which an upstream may act on) are two entries, over POST and GET.
func TestExtensionsAreKeyed(t *testing.T) {
	g := startGuarded(t)
	post := func(ext string) answer {
		return g.post(t, "", `{"query":`+jsonQuote(booksQuery)+`,"extensions":`+ext+`}`)
	}
	one := post(`{"tenant":"a"}`)
	two := post(`{"tenant":"b"}`)
	if one.cacheStatus != csStored || two.cacheStatus != csStored || one.body == two.body {
		t.Fatalf("extensions a then b: %+v then %+v, want two stored answers", one, two)
	}
	if r := post(`{"tenant":"a"}`); r.cacheStatus != csHit || r.body != one.body {
		t.Fatalf("extensions a again: %+v", r)
	}
	if r := g.post(t, "", `{"query":`+jsonQuote(booksQuery)+`}`); r.cacheStatus != csStored {
		t.Fatalf("no extensions: %+v, want an entry of its own", r)
	}
	q := "query=" + url.QueryEscape(booksQuery)
	getA := g.getRaw(t, q+"&extensions="+url.QueryEscape(`{"tenant":"a"}`))
	getB := g.getRaw(t, q+"&extensions="+url.QueryEscape(`{"tenant":"b"}`))
	if getA.cacheStatus != csStored || getB.cacheStatus != csStored || getA.body == getB.body {
		t.Fatalf("GET extensions a then b: %+v then %+v", getA, getB)
	}
}

func jsonQuote(s string) string { return fmt.Sprintf("%q", s) }

// TestVaryKeysByTheNamedHeaders: an answer whose Vary names request headers
// (other than Accept-Encoding) is served only to requests with the same
// values of them; `Vary: *` is not stored; Accept-Encoding alone changes
// nothing (a stored answer is never encoded).
func TestVaryKeysByTheNamedHeaders(t *testing.T) {
	g := startGateway(t, "", "")
	for _, c := range []struct {
		name, vary, header, v1, v2 string
	}{
		{"authorization", "Authorization", "Authorization", "Bearer one", "Bearer two"},
		{"two headers, lower case", "accept, x-tenant", "X-Tenant", "a", "b"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := strings.Replace(q1, "hr-1", c.name, 1)
			hdr := func(v string) map[string]string { return map[string]string{"X-Up-Vary": c.vary, c.header: v} }
			g.up.version.Store(1)
			one := g.query(t, body, hdr(c.v1))
			g.up.version.Store(2)
			two := g.query(t, body, hdr(c.v2))
			if one.cacheStatus != csStored || two.cacheStatus != csStored || two.body == one.body {
				t.Fatalf("%s %q then %q: %+v then %+v, want two answers fetched", c.header, c.v1, c.v2, one, two)
			}
			if r := g.query(t, body, hdr(c.v2)); r.cacheStatus != csHit || r.body != two.body {
				t.Fatalf("%s %q again: %+v, want a hit", c.header, c.v2, r)
			}
			// One answer per key: the first value's answer was replaced.
			g.up.version.Store(3)
			if r := g.query(t, body, hdr(c.v1)); r.outcome != "miss" || !strings.Contains(r.body, `"version":3`) {
				t.Fatalf("%s %q after %q: %+v, want a fresh answer", c.header, c.v1, c.v2, r)
			}
			if r := g.query(t, body, map[string]string{"X-Up-Vary": c.vary}); r.outcome != "miss" {
				t.Fatalf("without %s: %+v, want a miss", c.header, r)
			}
		})
	}
	star := strings.Replace(q1, "hr-1", "star", 1)
	for range 2 {
		if r := g.query(t, star, map[string]string{"X-Up-Vary": "Accept, *"}); r.cacheStatus != "civicgate; fwd=miss; detail=vary" {
			t.Fatalf("Vary: *: %+v", r)
		}
	}
	enc := strings.Replace(q1, "hr-1", "encoding", 1)
	g.query(t, enc, map[string]string{"X-Up-Vary": "Accept-Encoding", "Accept-Encoding": "gzip"})
	if r := g.query(t, enc, map[string]string{"X-Up-Vary": "Accept-Encoding", "Accept-Encoding": "br"}); r.cacheStatus != csHit {
		t.Fatalf("Vary: Accept-Encoding: %+v, want a hit", r)
	}
}

// TestUndecodedGraphQLRequestIsBypassed: a GraphQL POST that no guard
// decoded is never cached: the cache does not parse requests itself, and
// reads what a request is only from the guard's decoded request, so to it
// such a POST is a plain POST (docs/design.md D61).
func TestUndecodedGraphQLRequestIsBypassed(t *testing.T) {
	g := startGateway(t, "", "")
	for range 2 {
		if r := g.query(t, q1, map[string]string{"X-Undecoded": "1"}); r.cacheStatus != "civicgate; fwd=bypass; detail=method" {
			t.Fatalf("undecoded: %+v", r)
		}
	}
	if r := g.query(t, q1, map[string]string{"X-Aliased": "1"}); r.cacheStatus != csAliased {
		t.Fatalf("aliased: %+v", r)
	}
}

// TestSharedVaryAnswer: a Redis entry carries its Vary: once the memory is
// emptied, another Authorization is not answered from Redis (a miss whose
// answer replaces it), the same one is a shared hit.
func TestSharedVaryAnswer(t *testing.T) {
	dsn, _ := changeFeed(t)
	_, prefix := testenv.Redis(t)
	g := startGateway(t, fmt.Sprintf("invalidate postgres %s {\nfeed change_events\n}\nshared redis redis://%s/0 {\nkey_prefix %s\ntimeout 2s\n}",
		dsn, testenv.RedisAddr(), prefix), "")
	in := liveInstance(t)
	await(t, in, "the listener listens", in.up.Load)
	vary := func(auth string) map[string]string {
		return map[string]string{"X-Up-Vary": "Authorization", "Authorization": auth}
	}
	g.up.version.Store(1)
	one := g.query(t, q1, vary("Bearer one"))
	if one.cacheStatus != csStored {
		t.Fatalf("first: %+v", one)
	}
	in.store.flush()
	if r := g.query(t, q1, vary("Bearer one")); r.cacheStatus != csHit+paramShared || r.body != one.body {
		t.Fatalf("the same Authorization, memory emptied: %+v, want a shared hit", r)
	}
	in.store.flush()
	g.up.version.Store(2)
	two := g.query(t, q1, vary("Bearer two"))
	if two.cacheStatus != csStored || two.body == one.body {
		t.Fatalf("another Authorization, memory emptied: %+v, want its own answer", two)
	}
	in.store.flush()
	if r := g.query(t, q1, vary("Bearer two")); r.cacheStatus != csHit+paramShared || r.body != two.body {
		t.Fatalf("the second Authorization again: %+v, want its shared hit", r)
	}
}
