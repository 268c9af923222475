package reliability

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Hostile APQ and GET traffic against the real civicgate binary in front of
// the real gqlgen library engine (examples/other-backend/library).
const persistedGuard = `
			methods GET POST
			persisted_queries {
				max_entries 1000
			}`

const (
	bodyNotFound = `{"errors":[{"message":"PersistedQueryNotFound","extensions":{"code":"PERSISTED_QUERY_NOT_FOUND"}}]}`
	bodyMismatch = `{"errors":[{"message":"provided sha does not match query","extensions":{"code":"PERSISTED_QUERY_HASH_MISMATCH"}}]}`
	bodyVersion  = `{"errors":[{"message":"Unsupported persisted query version","extensions":{"code":"PERSISTED_QUERY_VERSION_NOT_SUPPORTED"}}]}`
)

func apqDoc(i int) string { return fmt.Sprintf(`{ book(id: "flood-%d") { id } }`, i) }

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func apqBody(query, hash string, version any) string {
	ext := fmt.Sprintf(`"extensions":{"persistedQuery":{"version":%v,"sha256Hash":%q}}`, version, hash)
	if query == "" {
		return "{" + ext + "}"
	}
	return fmt.Sprintf(`{"query":%q,%s}`, query, ext)
}

// flood sends n bodies from workers over kept-alive connections and returns
// how many got each status and body (bodies longer than 200 bytes are cut).
func flood(t *testing.T, a *anyBackend, key string, n, workers int, body func(i int) string) map[string]int {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()
	var (
		next atomic.Int64
		mu   sync.Mutex
		got  = map[string]int{}
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				st, b, _, err := doRequest(client, http.MethodPost, a.URL, key, body(i))
				if len(b) > 200 {
					b = b[:200]
				}
				k := fmt.Sprintf("%d %s", st, b)
				if err != nil {
					k = "error " + err.Error()
				}
				mu.Lock()
				got[k]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return got
}

func TestPersistedQueriesHostile(t *testing.T) {
	a, keys := startAnyBackend(t, persistedGuard, "partner")
	key := keys[0]
	const mib = 1 << 20

	t.Run("APQ flood: registrations, then unknown hashes", func(t *testing.T) {
		const entries, workers = 1000, 8
		// 50 000 of each under `make soak`; `make test` (race builds, about
		// 2.5 ms a request on 2 cores) sends 3 × max_entries of each.
		n := 3 * entries
		if os.Getenv("CIVICGATE_SOAK") != "" {
			n = 50_000
		}
		heapBefore := a.metric(heapMetric)
		start := time.Now()
		got := flood(t, a, key, n, workers, func(i int) string { return apqBody(apqDoc(i), sha(apqDoc(i)), 1) })
		const served = `200 {"data":{"book":null}}`
		if got[served] != n {
			t.Fatalf("registrations answered %v, want %d × %s", got, n, served)
		}
		t.Logf("%d registrations in %v", n, time.Since(start))
		// The earliest are evicted, the latest served by hash alone.
		for _, i := range []int{0, 1, entries, n - entries - 2*workers} {
			if st, b := a.post(key, apqBody("", sha(apqDoc(i)), 1)); st != 200 || b != bodyNotFound {
				t.Fatalf("hash of registration %d: %d %s, want PersistedQueryNotFound", i, st, b)
			}
		}
		// Random unknown hashes: all PersistedQueryNotFound, none reaches the
		// engine, nothing is stored (the latest entries all stay).
		reqs := a.Up.requestCount()
		start = time.Now()
		got = flood(t, a, key, n, workers, func(int) string {
			var h [32]byte
			_, _ = rand.Read(h[:])
			return apqBody("", hex.EncodeToString(h[:]), 1)
		})
		if got["200 "+bodyNotFound] != n {
			t.Fatalf("unknown hashes answered %v", got)
		}
		t.Logf("%d unknown hashes in %v", n, time.Since(start))
		if d := a.Up.requestCount() - reqs; d != 0 {
			t.Fatalf("the engine received %d requests for unknown hashes", d)
		}
		// Concurrent registrations near the eviction boundary may land out
		// of order by up to one per worker: the latest entries−2×workers
		// must all be there.
		first := n - entries + 2*workers
		got = flood(t, a, key, n-first, workers, func(i int) string { return apqBody("", sha(apqDoc(first+i)), 1) })
		if got[served] != n-first {
			t.Fatalf("hash-only requests for the latest %d registrations: %v", n-first, got)
		}
		heapAfter := a.metric(heapMetric)
		t.Logf("gateway heap in use %.1f → %.1f MiB", heapBefore/mib, heapAfter/mib)
		if heapAfter-heapBefore > 64*mib {
			t.Fatalf("gateway heap in use grew by %.1f MiB with max_entries %d", (heapAfter-heapBefore)/mib, entries)
		}
	})

	t.Run("GET: a mutation is 405 Allow POST, variables not JSON is 400", func(t *testing.T) {
		reqs := a.Up.requestCount()
		q := url.Values{"query": {`mutation { borrowBook(bookId: "b1") { id } }`}}
		st, b, h, err := doRequest(http.DefaultClient, http.MethodGet, a.URL+"?"+q.Encode(), key, "")
		if err != nil {
			t.Fatal(err)
		}
		if st != http.StatusMethodNotAllowed || h.Get("Allow") != "POST" {
			t.Fatalf("GET mutation: %d Allow %q %s, want 405 Allow POST", st, h.Get("Allow"), b)
		}
		q = url.Values{"query": {`query Q($id: ID!) { book(id: $id) { title } }`}, "variables": {`{id: b1}`}}
		st, b, _, err = doRequest(http.DefaultClient, http.MethodGet, a.URL+"?"+q.Encode(), key, "")
		if err != nil {
			t.Fatal(err)
		}
		if st != http.StatusBadRequest || !strings.Contains(b, `\"variables\" must be a JSON object or null`) {
			t.Fatalf("GET variables not JSON: %d %s, want 400", st, b)
		}
		if d := a.Up.requestCount() - reqs; d != 0 {
			t.Fatalf("the engine received %d requests", d)
		}
		// The same query with JSON variables passes over GET.
		q.Set("variables", `{"id":"b1"}`)
		st, b, _, err = doRequest(http.DefaultClient, http.MethodGet, a.URL+"?"+q.Encode(), key, "")
		if err != nil || st != 200 || !strings.Contains(b, "Middlemarch") {
			t.Fatalf("GET query: %d %s %v", st, b, err)
		}
	})

	t.Run("invalid persisted-query hashes", func(t *testing.T) {
		doc := `{ book(id: "b2") { title } }`
		h := sha(doc)
		reqs := a.Up.requestCount()
		for _, c := range []struct{ name, body, want string }{
			{"63 hex chars, hash only", apqBody("", h[:63], 1), bodyMismatch},
			{"63 hex chars with the query", apqBody(doc, h[:63], 1), bodyMismatch},
			{"65 hex chars", apqBody(doc, h+"0", 1), bodyMismatch},
			{"non-hex", apqBody(doc, "zz"+h[2:], 1), bodyMismatch},
			{"non-hex, hash only", apqBody("", strings.Repeat("g", 64), 1), bodyMismatch},
			{"version 2", apqBody(doc, h, 2), bodyVersion},
			{"version 2, hash only", apqBody("", h, 2), bodyVersion},
			{"a hash with a query it does not match", apqBody(doc, sha(doc+" "), 1), bodyMismatch},
		} {
			st, b := a.post(key, c.body)
			if st != http.StatusBadRequest || b != c.want {
				t.Errorf("%s: %d %s, want 400 %s", c.name, st, b, c.want)
			}
		}
		// Shapes no client should send: refused, never a 5xx.
		for _, body := range []string{
			`{"extensions":{"persistedQuery":{"version":1,"sha256Hash":12}}}`,
			`{"extensions":{"persistedQuery":{"version":"1","sha256Hash":"` + h + `"}}}`,
			`{"extensions":{"persistedQuery":"` + h + `"}}`,
			`{"extensions":{"persistedQuery":{"version":1,"sha256Hash":null}}}`,
			`{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"\u0030` + h[1:] + `"}}}`,
			`{"query":null,"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + strings.Repeat("0", 64) + `"}}}`,
		} {
			if st, b := a.post(key, body); st >= 500 {
				t.Errorf("%s: %d %s", body, st, b)
			}
		}
		if d := a.Up.requestCount() - reqs; d != 0 {
			t.Errorf("the engine received %d requests for invalid hashes", d)
		}
		// Uppercase hex: hex is case-insensitive (hex.Decode), so the hash
		// is accepted, registers the document and finds it in either case.
		st, b := a.post(key, apqBody(doc, strings.ToUpper(h), 1))
		if st != 200 || !strings.Contains(b, `{"data":{"book":{"title":`) {
			t.Fatalf("uppercase hash with its query: %d %s", st, b)
		}
		for _, hh := range []string{h, strings.ToUpper(h)} {
			if st, b2 := a.post(key, apqBody("", hh, 1)); st != 200 || b2 != b {
				t.Fatalf("hash-only %s…: %d %s, want %s", hh[:8], st, b2, b)
			}
		}
		a.alive(key)
	})
}
