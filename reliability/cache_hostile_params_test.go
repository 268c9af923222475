package reliability

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The response cache on a route that takes GET and POST (`methods GET POST`),
// the real civicgate binary in front of the example's real gqlgen engine,
// attacked with requests shaped to split the cache key from what the guard
// and the engine read (docs/design.md D40): GraphQL parameter names in other
// spellings, duplicates, extensions, parameters in a POST's URL. The engine
// decodes parameter names as Go's net/url does, so `vari%61bles` reaches it
// as variables: the attack is real, and its answer must never be served to
// anyone else.

// cacheParamsGuard is added to the any-backend Caddyfile's graphql_guard
// block: GET allowed, then the block is closed and graphql_cache (defaults:
// scope {civic.families}, ttl 60s) placed before reverse_proxy — inside the
// route, handlers run in the order written.
const cacheParamsGuard = `			methods GET POST
		}
		graphql_cache {
			ttl 60s`

// booksFirst takes the number of books from $n: 1 unless variables say.
const booksFirst = `query B($n: Int = 1) { books(first: $n) { nodes { title } } }`

func TestCacheHostileParameters(t *testing.T) {
	t.Parallel()
	a, keys := startAnyBackend(t, cacheParamsGuard, "partner", "partner")
	key, other := keys[0], keys[1]
	get := func(key, rawQuery string, hdr ...string) cacheReply {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, a.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.RawQuery = rawQuery // as written: nothing re-encoded
		req.Header.Set("Authorization", "Bearer "+key)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		return sendCacheReq(t, req)
	}
	post := func(rawQuery, body string) cacheReply {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, a.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.URL.RawQuery = rawQuery
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		return sendCacheReq(t, req)
	}
	const aliased = "civicgate; fwd=bypass; detail=aliased"
	honest := "query=" + url.QueryEscape(booksFirst)
	four := url.QueryEscape(`{"n":4}`)
	oneBook := func(r cacheReply) bool {
		return r.status == 200 && strings.Contains(r.body, "Middlemarch") && !strings.Contains(r.body, "Invisible Cities")
	}

	t.Run("EncodedName", func(t *testing.T) {
		// The engine takes vari%61bles as variables: four books.
		for _, cc := range []string{"no-cache", ""} {
			r := get(key, honest+"&vari%61bles="+four, "Cache-Control", cc)
			if r.status != 200 || r.cs() != aliased || !strings.Contains(r.body, "Invisible Cities") {
				t.Fatalf("vari%%61bles (Cache-Control %q): %s, want the engine's four books, %q", cc, r, aliased)
			}
		}
		// ?query=Q is its own answer, for this caller and every other.
		first := get(key, honest)
		wantCache(t, "?query=Q", first, 200, csStored)
		if !oneBook(first) {
			t.Fatalf("?query=Q was answered with another request's books: %s", first)
		}
		for _, k := range []string{key, other} {
			r := get(k, honest)
			wantCache(t, "?query=Q again", r, 200, "hit")
			if r.body != first.body {
				t.Fatalf("?query=Q hit: %s, want %s", r.body, first.body)
			}
		}
	})

	t.Run("OtherSpellings", func(t *testing.T) {
		// Percent-encoded exact names: every reader decodes them alike, so they pass, past the cache.
		for _, raw := range []string{
			honest + "&%76ariables=" + four,
			honest + "&operation%4Eame=B",
			honest + "&ext%65nsions=" + url.QueryEscape(`{"x":1}`),
			"qu%65ry=" + url.QueryEscape(booksFirst),
		} {
			r := get(key, raw, "Cache-Control", "no-cache")
			if r.status != 200 || r.cs() != aliased {
				t.Fatalf("%s: %s, want 200 %q", raw, r, aliased)
			}
		}
		// Names only a lenient reader takes for variables: refused by the guard (docs/design.md D64).
		for raw, name := range map[string]string{
			honest + "&Variables=" + four:       `Variables`,
			honest + "&variables%5B%5D=" + four: `variables[]`,
			honest + "&variables%00=" + four:    `variables\\x00`,
			honest + "&+variables=" + four:      ` variables`,
		} {
			want := `{"errors":[{"message":"Request URL parameter \"` + name + `\" must be spelled \"variables\""}]}`
			if r := get(key, raw, "Cache-Control", "no-cache"); r.status != 400 || r.body != want || r.cs() != "" {
				t.Fatalf("%s: %s, want the guard's 400 %s and no Cache-Status", raw, r, want)
			}
		}
		if r := get(key, honest); !r.hit() || !oneBook(r) {
			t.Fatalf("?query=Q after the spellings: %s, want its own hit", r)
		}
	})

	t.Run("Duplicates", func(t *testing.T) {
		one := url.QueryEscape(`{"n":1}`)
		for _, raw := range []string{
			honest + "&variables=" + one + "&variables=" + four,
			honest + "&variables=" + one + "&vari%61bles=" + four,
		} {
			r := get(key, raw)
			if r.status != 400 || r.body != `{"errors":[{"message":"Request URL query has \"variables\" more than once"}]}` || r.cs() != "" {
				t.Fatalf("%s: %s, want the guard's 400 and no Cache-Status", raw, r)
			}
		}
		dup := `{"query":` + jsonString(booksFirst) + `,"variables":{"n":1},"variables":{"n":4}}`
		if r := post("", dup); r.status != 400 || r.cs() != "" {
			t.Fatalf("POST with variables twice: %s, want 400", r)
		}
	})

	t.Run("PostWithURLParameters", func(t *testing.T) {
		body := `{"query":` + jsonString(booksFirst) + `}`
		for _, raw := range []string{"variables=" + four, "a=1;variables=" + four} {
			if r := post(raw, body); r.status != 200 || r.cs() != aliased {
				t.Fatalf("POST ?%s: %s, want 200 %q", raw, r, aliased)
			}
		}
		if r := post("Query=x", body); r.status != 400 || r.cs() != "" {
			t.Fatalf("POST ?Query=x: %s, want the guard's 400 (docs/design.md D64)", r)
		}
		escaped := `{"query":` + jsonString(booksFirst) + `,"vari\u0061bles":{"n":4}}`
		if r := post("", escaped); r.status != 200 || r.cs() != aliased || !strings.Contains(r.body, "Invisible Cities") {
			t.Fatalf("POST with an escaped member name: %s, want four books, %q", r, aliased)
		}
		first := post("", body)
		wantCache(t, "POST the plain body", first, 200, csStored)
		if !oneBook(first) {
			t.Fatalf("POST the plain body: %s", first)
		}
	})

	t.Run("Extensions", func(t *testing.T) {
		q := "query=" + url.QueryEscape(`query E($n: Int = 2) { books(first: $n) { nodes { title } } }`)
		a1 := get(key, q+"&extensions="+url.QueryEscape(`{"client":"a"}`))
		b1 := get(key, q+"&extensions="+url.QueryEscape(`{"client":"b"}`))
		wantCache(t, "extensions a", a1, 200, csStored)
		wantCache(t, "extensions b", b1, 200, csStored)
		if r := get(key, q+"&extensions="+url.QueryEscape(`{"client":"a"}`)); !r.hit() || r.body != a1.body {
			t.Fatalf("extensions a again: %s", r)
		}
	})

	if n := a.Up.requestCount(); n == 0 {
		t.Fatal("nothing reached the engine")
	}
}

// sendCacheReq sends req with the default client and reads the reply.
func sendCacheReq(t *testing.T, req *http.Request) cacheReply {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.URL, err)
	}
	return cacheReply{status: resp.StatusCode, body: string(b), h: resp.Header}
}
