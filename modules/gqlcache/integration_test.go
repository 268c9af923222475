package gqlcache

import (
	"strings"
	"sync"
	"testing"

	"github.com/civicgate/civicgate/modules/contract"
)

const q1 = `{"query":"query Bill($id: ID!) { bill(id: $id) { title } }","variables":{"id":"hr-1"},"operationName":"Bill"}`

// q1Decoded is q1 as graphql_guard publishes it.
var q1Decoded = contract.GraphQLRequest{Query: []byte("query Bill($id: ID!) { bill(id: $id) { title } }"),
	Variables: []byte(`{"id":"hr-1"}`), OperationName: []byte("Bill")}

// TestRepeatedQueryIsAByteIdenticalHit: the second identical query is
// answered from the store with the miss's status, Content-Type and body,
// plus Cache-Status and Age, without reaching the upstream.
func TestRepeatedQueryIsAByteIdenticalHit(t *testing.T) {
	g := startGateway(t, "", "")
	miss := g.query(t, q1, nil)
	if miss.status != 200 || miss.cacheStatus != "civicgate; fwd=miss; stored" || miss.outcome != "miss" || miss.age != "" {
		t.Fatalf("miss: %+v", miss)
	}
	hit := g.query(t, q1, nil)
	want := miss
	want.cacheStatus, want.age, want.outcome = "civicgate; hit; ttl=60", "0", "hit"
	wantAnswer(t, hit, want)
	if n := g.up.calls.Load(); n != 1 {
		t.Fatalf("%d upstream calls, want 1", n)
	}
	// other variables, operation name or document: other entries
	g.query(t, strings.Replace(q1, "hr-1", "hr-2", 1), nil)
	g.query(t, q1, map[string]string{"X-Op-Name": "Other"})
	g.query(t, q1, map[string]string{"X-Doc": "doc2"})
	if n := g.up.calls.Load(); n != 4 {
		t.Fatalf("%d upstream calls, want 4", n)
	}
	// a plain GET route, keyed by path and query
	r1 := g.get(t, "/bills?congress=118")
	r2 := g.get(t, "/bills?congress=118")
	if r1.cacheStatus != "civicgate; fwd=miss; stored" || r2.cacheStatus != "civicgate; hit; ttl=60" || r1.body != r2.body {
		t.Fatalf("GET route: %+v then %+v", r1, r2)
	}
	if r3 := g.get(t, "/bills?congress=117"); !strings.HasPrefix(r3.cacheStatus, "civicgate; fwd=miss") {
		t.Fatalf("another query string was a hit: %+v", r3)
	}
}

// TestWhatIsNeverCached: mutations, answers with errors, non-200,
// Set-Cookie, no-store, private, max-age=0 and requests with no-store are
// forwarded every time; a request with no-cache is forwarded and its fresh
// answer stored.
func TestWhatIsNeverCached(t *testing.T) {
	g := startGateway(t, "", "ttl 30s")
	for name, c := range map[string]struct {
		hdr         map[string]string
		cacheStatus string
		outcome     string
	}{
		"mutation":      {map[string]string{"X-Op": "mutation"}, "civicgate; fwd=bypass; detail=mutation", "bypass"},
		"errors":        {map[string]string{"X-Up-Body": `{"errors":[{"message":"no"}],"data":null}`}, "civicgate; fwd=miss; detail=errors", "miss"},
		"status":        {map[string]string{"X-Up-Status": "503"}, "civicgate; fwd=miss; detail=status", "miss"},
		"set-cookie":    {map[string]string{"X-Up-Set-Cookie": "s=1"}, "civicgate; fwd=miss; detail=set-cookie", "miss"},
		"no-store":      {map[string]string{"X-Up-Cache-Control": "no-store"}, "civicgate; fwd=miss; detail=no-store", "miss"},
		"private":       {map[string]string{"X-Up-Cache-Control": "private, max-age=60"}, "civicgate; fwd=miss; detail=private", "miss"},
		"max-age=0":     {map[string]string{"X-Up-Cache-Control": "max-age=0"}, "civicgate; fwd=miss; detail=ttl=0", "miss"},
		"request store": {map[string]string{"Cache-Control": "no-store"}, "civicgate; fwd=bypass; detail=no-store", "bypass"},
	} {
		t.Run(name, func(t *testing.T) {
			before := g.up.calls.Load()
			body := strings.Replace(q1, "hr-1", name, 1)
			for i := range 2 {
				a := g.query(t, body, c.hdr)
				if a.cacheStatus != c.cacheStatus || a.outcome != c.outcome {
					t.Fatalf("request %d: %+v", i, a)
				}
			}
			if n := g.up.calls.Load() - before; n != 2 {
				t.Fatalf("%d upstream calls, want 2", n)
			}
		})
	}
	// s-maxage caps the TTL
	g.query(t, strings.Replace(q1, "hr-1", "short", 1), map[string]string{"X-Up-Cache-Control": "max-age=600, s-maxage=5"})
	if a := g.query(t, strings.Replace(q1, "hr-1", "short", 1), nil); a.cacheStatus != "civicgate; hit; ttl=5" {
		t.Fatalf("s-maxage: %+v", a)
	}
	// no-cache: forwarded, and the fresh answer replaces the stored one
	g.query(t, q1, nil)
	g.up.version.Store(2)
	fresh := g.query(t, q1, map[string]string{"Cache-Control": "no-cache"})
	if fresh.cacheStatus != "civicgate; fwd=request; stored" || !strings.Contains(fresh.body, `"version":2`) {
		t.Fatalf("no-cache: %+v", fresh)
	}
	if a := g.query(t, q1, nil); a.cacheStatus != "civicgate; hit; ttl=30" || a.body != fresh.body {
		t.Fatalf("after no-cache: %+v", a)
	}
}

// TestScopesNeverShareAnEntry: callers entitled to different families, or
// (scope private) of different organizations, get entries of their own.
func TestScopesNeverShareAnEntry(t *testing.T) {
	g := startGateway(t, "", "")
	a := g.query(t, q1, map[string]string{"X-Caller": "bills"})
	b := g.query(t, q1, map[string]string{"X-Caller": "bills,members"})
	if a.cacheStatus != "civicgate; fwd=miss; stored" || b.cacheStatus != "civicgate; fwd=miss; stored" {
		t.Fatalf("a second scope shared the first's entry: %+v then %+v", a, b)
	}
	if c := g.query(t, q1, map[string]string{"X-Caller": "bills,members"}); c.outcome != "hit" {
		t.Fatalf("same scope: %+v", c)
	}

	g = startGateway(t, "", "scope private")
	g.query(t, q1, map[string]string{"X-Org": "org-a"})
	if b := g.query(t, q1, map[string]string{"X-Org": "org-b"}); b.outcome != "miss" {
		t.Fatalf("scope private: another organization hit: %+v", b)
	}
	if c := g.query(t, q1, map[string]string{"X-Org": "org-a"}); c.outcome != "hit" {
		t.Fatalf("scope private: same organization: %+v", c)
	}
}

// TestConcurrentMissesMakeOneUpstreamCall: identical misses arriving while
// the first is upstream wait for it and get its stored answer.
func TestConcurrentMissesMakeOneUpstreamCall(t *testing.T) {
	g := startGateway(t, "", "")
	in := liveInstance(t)
	const n = 8
	answers := make([]answer, n)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		answers[0] = g.query(t, q1, map[string]string{"X-Up-Block": "1"})
	}()
	<-g.up.arrived // the leader is upstream
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = g.query(t, q1, map[string]string{"X-Up-Block": "1"})
		}()
	}
	await(t, in, "every other miss waits for the leader", func() bool { return in.flights.waiting() == n-1 })
	close(g.up.release)
	wg.Wait()
	if c := g.up.calls.Load(); c != 1 {
		t.Fatalf("%d upstream calls, want 1", c)
	}
	for i, a := range answers[1:] {
		if a.body != answers[0].body || a.status != 200 || a.cacheStatus != "civicgate; fwd=miss; collapsed" {
			t.Fatalf("waiter %d: %+v, leader %+v", i+1, a, answers[0])
		}
	}
}

// TestStaleStoreRace: a miss that fetched the old value before its tag was
// invalidated is not stored, and the next request fetches the new value.
func TestStaleStoreRace(t *testing.T) {
	g := startGateway(t, "", "")
	in := liveInstance(t)
	done := make(chan answer)
	go func() { done <- g.query(t, q1, map[string]string{"X-Up-Block": "1", "X-Families": "members"}) }()
	<-g.up.arrived // the old value is being read
	in.store.invalidate([]string{"members"})
	g.up.version.Store(2)
	close(g.up.release)
	old := <-done
	if old.cacheStatus != "civicgate; fwd=miss; detail=invalidated" || !strings.Contains(old.body, `"version":1`) {
		t.Fatalf("the racing miss: %+v", old)
	}
	next := g.query(t, q1, map[string]string{"X-Families": "members"})
	if next.outcome != "miss" || !strings.Contains(next.body, `"version":2`) {
		t.Fatalf("after the invalidation: %+v", next)
	}
	if again := g.query(t, q1, map[string]string{"X-Families": "members"}); again.outcome != "hit" || again.body != next.body {
		t.Fatalf("the new value was not stored: %+v", again)
	}
}

// TestAdminPurge: the admin API invalidates a family tag, a Surrogate-Key
// tag (the header is not sent to the client), or everything; bad requests
// are 400s that say what is wanted.
func TestAdminPurge(t *testing.T) {
	g := startGateway(t, "", "")
	bills := func() answer { return g.query(t, q1, map[string]string{"X-Up-Surrogate-Key": "bill:hr-1 bill:hr-2"}) }
	members := func() answer { return g.query(t, q1, map[string]string{"X-Families": "members"}) }
	if a := bills(); a.sk != "" || a.cacheStatus != "civicgate; fwd=miss; stored" {
		t.Fatalf("Surrogate-Key reached the client or the answer was not stored: %+v", a)
	}
	members()
	if status, body := g.purge(t, `{"tags":["bills"]}`); status != 200 || strings.TrimSpace(body) != `{"purged_tags":1}` {
		t.Fatalf("purge: %d %s", status, body)
	}
	if bills().outcome != "miss" || members().outcome != "hit" {
		t.Fatal("purging bills: want bills a miss and members a hit")
	}
	if bills().outcome != "hit" {
		t.Fatal("bills not stored again")
	}
	if status, _ := g.purge(t, `{"tags":["bill:hr-2"]}`); status != 200 || bills().outcome != "miss" {
		t.Fatal("purging a Surrogate-Key tag left its entry")
	}
	if status, _ := g.purge(t, `{"all":true}`); status != 200 || members().outcome != "miss" {
		t.Fatal("purge all left an entry")
	}
	for body, msg := range map[string]string{
		`{"tags":`:               `purge request: want {"tags":["<tag>",...]} or {"all":true}`,
		`{"tag":["bills"]}`:      `unknown field "tag"`,
		`{}`:                     `give either "tags" (non-empty) or "all": true`,
		`{"tags":["a b"]}`:       `tag "a b" must be one word`,
		`{"tags":["a"]} {"x":1}`: "trailing data",
	} {
		if status, got := g.purge(t, body); status != 400 || !strings.Contains(got, msg) {
			t.Errorf("%s: %d %s, want 400 with %q", body, status, got, msg)
		}
	}
}

// TestReloadKeepsTheStore: a reload with the same configuration keeps the
// entries (the instance lives in a UsagePool).
func TestReloadKeepsTheStore(t *testing.T) {
	g := startGateway(t, "max_bytes 8MiB", "")
	before := liveInstance(t)
	g.query(t, q1, nil)
	g.reload(t)
	if liveInstance(t) != before {
		t.Fatal("the reload made a new cache instance")
	}
	if a := g.query(t, q1, nil); a.outcome != "hit" {
		t.Fatalf("after the reload: %+v", a)
	}
}
