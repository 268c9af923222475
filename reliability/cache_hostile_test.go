package reliability

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// The response cache (modules/gqlcache) through the real gateway, attacked:
// requests built to share an entry they must not share, callers who must not
// be served a cached answer, hostile request headers, hostile admin purges
// and a lost invalidation listener (README.md "The response cache's hostile
// cases").

// cacheEnv is one stack whose gateway reaches PostgreSQL through a proxy the
// test can cut; recordsd and the CLI commands reach it directly.
type cacheEnv struct {
	s     *stack.Stack
	pg    *testenv.Proxy
	admin string // http://localhost:PORT, Caddy's admin endpoint
	dsns  []string

	ent, paid, free, freeRL, freeCost, suspended, revoked string
	revokedID                                             string
}

// cacheReply is one answer: status, body and the headers the cache sets.
type cacheReply struct {
	status int
	body   string
	h      http.Header
}

func (r cacheReply) cs() string { return r.h.Get("Cache-Status") }

func (r cacheReply) hit() bool { return strings.HasPrefix(r.cs(), "civicgate; hit; ttl=") }

func (r cacheReply) String() string {
	return fmt.Sprintf("%d Cache-Status %q Age %q %.300s", r.status, r.cs(), r.h.Get("Age"), r.body)
}

const (
	csStored   = "civicgate; fwd=miss; stored"
	csRequest  = "civicgate; fwd=request; stored"
	csDown     = "civicgate; fwd=miss; detail=invalidation-down"
	csBypassNS = "civicgate; fwd=bypass; detail=no-store"
)

// TestCacheHostile runs every case on one stack (subtests share it: each
// uses documents of its own, so no case sees another's entries).
func TestCacheHostile(t *testing.T) {
	t.Parallel()
	c := startCacheEnv(t)
	t.Run("Poisoning", c.poisoning)
	t.Run("Variables", c.variables)
	t.Run("Scope", c.scope)
	t.Run("RateLimitOnHits", c.rateLimit)
	t.Run("CostOnHits", c.cost)
	t.Run("RequestHeaders", c.requestHeaders)
	t.Run("AdminPurge", c.adminPurge)
	t.Run("ListenerLoss", c.listenerLoss) // last: it flushes everything
	t.Run("Logs", c.logs)
}

func startCacheEnv(t *testing.T) *cacheEnv {
	c := &cacheEnv{}
	s := stack.New(t, &bins)
	c.s = s
	s.Prepare()
	c.ent, _ = s.IssueKey("cacheent", "enterprise", "live")
	c.paid, _ = s.IssueKey("cachepaid", "paid_beta", "live")
	c.free, _ = s.IssueKey("cachefree", "free", "live")
	c.freeRL, _ = s.IssueKey("cachefreerl", "free", "live")
	c.freeCost, _ = s.IssueKey("cachefreecost", "free", "live")
	c.suspended, _ = s.IssueKey("cacheshady", "enterprise", "live")
	c.revoked, c.revokedID = s.IssueKey("cacheold", "enterprise", "live")
	s.StartRecordsd()
	s.Run(bins.Recordsd, "sync", "members", "--file", cacheLegislators(t, 0))

	u, err := url.Parse(s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	c.pg = testenv.NewProxy(t, u.Host)
	u.Host = c.pg.Addr()
	c.dsns = []string{s.DSN, u.String()}
	s.Setenv("DATABASE_URL", u.String())
	s.StartGateway("caddyfile/Caddyfile.local")
	// The gateway keeps the proxied DSN; recordsd's syncs and the keys
	// commands go on reaching PostgreSQL directly while the proxy is cut.
	s.Setenv("DATABASE_URL", s.DSN)
	c.admin = "http://" + s.Getenv("CIVICGATE_ADMIN")
	return c
}

// do sends one request to the gateway; hdr are name, value pairs.
func (c *cacheEnv) do(t *testing.T, method, path, key, body string, hdr ...string) cacheReply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, c.s.HTTPSURL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.s.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return cacheReply{status: resp.StatusCode, body: string(b), h: resp.Header}
}

func (c *cacheEnv) gql(t *testing.T, key, body string, hdr ...string) cacheReply {
	t.Helper()
	return c.do(t, "POST", "/v1/graphql", key, body, hdr...)
}

// truth is the uncached answer: the same request with Cache-Control:
// no-cache, which is forwarded (and stores its fresh answer).
func (c *cacheEnv) truth(t *testing.T, key, body string) cacheReply {
	t.Helper()
	r := c.gql(t, key, body, "Cache-Control", "no-cache")
	if r.status != 200 || r.cs() != csRequest || !isGraphQLData(r.body) {
		t.Fatalf("uncached truth: %s, want 200 %q with data", r, csRequest)
	}
	return r
}

// wantCache fails unless r has status and exactly the Cache-Status cs ("hit"
// for any hit, "" for none at all).
func wantCache(t *testing.T, what string, r cacheReply, status int, cs string) {
	t.Helper()
	ok := r.status == status
	switch cs {
	case "hit":
		ok = ok && r.hit() && r.h.Get("Age") != "" && len(r.h.Values("Cache-Status")) == 1
	case "":
		ok = ok && len(r.h.Values("Cache-Status")) == 0
	default:
		ok = ok && r.cs() == cs && len(r.h.Values("Cache-Status")) == 1 && r.h.Get("Age") == ""
	}
	if !ok {
		t.Fatalf("%s: %s, want %d %q", what, r, status, cs)
	}
}

// q is a POST body with the document doc and the raw members rest (e.g.
// `,"variables":{}`).
func q(doc, rest string) string {
	return `{"query":` + jsonString(doc) + rest + `}`
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// fresh asserts the first answer to body is a stored miss equal to the
// uncached truth, and that the repeat is a hit byte for byte; it returns
// the answer.
func (c *cacheEnv) fresh(t *testing.T, what, key, body string) cacheReply {
	t.Helper()
	first := c.gql(t, key, body)
	wantCache(t, what+": first", first, 200, csStored)
	if !isGraphQLData(first.body) {
		t.Fatalf("%s: first answer has no data: %s", what, first)
	}
	if tr := c.truth(t, key, body); tr.body != first.body {
		t.Fatalf("%s: stored answer differs from the uncached truth:\n%s\n%s", what, first.body, tr.body)
	}
	again := c.gql(t, key, body)
	wantCache(t, what+": repeat", again, 200, "hit")
	if again.body != first.body || again.h.Get("Content-Type") != first.h.Get("Content-Type") {
		t.Fatalf("%s: hit differs from the miss:\n%s\n%s", what, again.body, first.body)
	}
	return first
}

const membersWA = `query M { members(input:{state:"WA", limit:5}) { items { name bioguide_id } } }`

func (c *cacheEnv) poisoning(t *testing.T) {
	base := c.fresh(t, "base document", c.ent, q(membersWA, ""))
	// Only white space and comments differ: one normal form, one entry.
	spaced := "# a comment\nquery   M {\n\tmembers( input : { state : \"WA\" , limit : 5 } ) # another\n { items { name ,, bioguide_id } }\n}\n"
	r := c.gql(t, c.ent, q(spaced, ""))
	wantCache(t, "white space and comments", r, 200, "hit")
	if r.body != base.body {
		t.Fatalf("white space variant served another body:\n%s\n%s", r.body, base.body)
	}

	// Each of these differs in what it asks: never the base entry, never
	// each other's; each answer is the uncached truth.
	variants := []struct{ name, body string }{
		{"alias", q(`query M { members(input:{state:"WA", limit:5}) { items { name id: bioguide_id } } }`, "")},
		{"argument", q(`query M { members(input:{state:"WA", limit:4}) { items { name bioguide_id } } }`, "")},
		{"fragment A", q(`query M { members(input:{state:"WA", limit:5}) { items { ...F } } } fragment F on Member { name bioguide_id }`, "")},
		{"fragment B", q(`query M { members(input:{state:"WA", limit:5}) { items { ...F } } } fragment F on Member { name state }`, "")},
		{"operation name", q(`query N { members(input:{state:"WA", limit:5}) { items { name bioguide_id } } }`, "")},
	}
	bodies := map[string]string{}
	for _, v := range variants {
		got := c.fresh(t, v.name, c.ent, v.body)
		bodies[v.name] = got.body
	}
	if bodies["alias"] == base.body || bodies["argument"] == base.body || bodies["fragment B"] == base.body {
		t.Fatalf("variants did not change the answer, so the test proves nothing: %v", bodies)
	}

	// A directive whose condition is a variable: one document, two answers.
	include := `query D($x: Boolean!) { members(input:{state:"WA", limit:5}) { items { name bioguide_id @include(if: $x) } } }`
	yes := c.fresh(t, "@include true", c.ent, q(include, `,"variables":{"x":true}`))
	no := c.fresh(t, "@include false", c.ent, q(include, `,"variables":{"x":false}`))
	if strings.Contains(no.body, "bioguide_id") || !strings.Contains(yes.body, "bioguide_id") {
		t.Fatalf("@include answers:\n%s\n%s", yes.body, no.body)
	}

	// The operation selected in a multi-operation document.
	multi := `query A { members(input:{state:"WA", limit:3}) { items { name } } } query B { members(input:{state:"WA", limit:3}) { items { bioguide_id } } }`
	a := c.fresh(t, "operation A", c.ent, q(multi, `,"operationName":"A"`))
	b := c.fresh(t, "operation B", c.ent, q(multi, `,"operationName":"B"`))
	if a.body == b.body || !strings.Contains(b.body, "bioguide_id") || strings.Contains(a.body, "bioguide_id") {
		t.Fatalf("operations A and B:\n%s\n%s", a.body, b.body)
	}
}

const membersVars = `query V($n: Int, $s: String) { members(input:{state:$s, limit:$n}) { items { name } } }`

func (c *cacheEnv) variables(t *testing.T) {
	// Members in another order: two entries (keyed as sent), both correct.
	ab := c.fresh(t, "variables n,s", c.ent, q(membersVars, `,"variables":{"n":3,"s":"WA"}`))
	ba := c.fresh(t, "variables s,n", c.ent, q(membersVars, `,"variables":{"s":"WA","n":3}`))
	if ab.body != ba.body {
		t.Fatalf("re-ordered variables answer differently:\n%s\n%s", ab.body, ba.body)
	}

	// variables given twice: which one a server takes is not certain, so
	// the cache never answers it (whatever the guard does with it).
	// The guard refuses such a body first; the cache, behind it, would
	// bypass it (detail=variables, modules/gqlcache keys_test.go).
	twice := q(membersVars, `,"variables":{"n":3,"s":"WA"},"variables":{"n":1,"s":"OR"}`)
	for i := range 3 {
		r := c.gql(t, c.ent, twice)
		if r.status != 400 || r.body != `{"errors":[{"message":"Request body has duplicate key \"variables\""}]}` || r.cs() != "" {
			t.Fatalf("variables twice, %d: %s, want the guard's 400 and no Cache-Status", i, r)
		}
	}

	// null, absent and {}: three entries, the same answer.
	plain := `query P { members(input:{state:"WA", limit:2}) { items { name } } }`
	var answers []string
	for _, rest := range []string{`,"variables":null`, ``, `,"variables":{}`} {
		answers = append(answers, c.fresh(t, "variables "+rest, c.ent, q(plain, rest)).body)
	}
	if answers[0] != answers[1] || answers[1] != answers[2] {
		t.Fatalf("null, absent and {} variables answer differently: %q", answers)
	}

	// Huge variables (an undeclared 100 KiB member, ignored by the server):
	// one byte apart, two entries.
	pad := strings.Repeat("x", 100<<10)
	big1 := c.fresh(t, "huge variables 1", c.ent, q(membersVars, `,"variables":{"n":2,"s":"WA","pad":"`+pad+`1"}`))
	big2 := c.fresh(t, "huge variables 2", c.ent, q(membersVars, `,"variables":{"n":2,"s":"WA","pad":"`+pad+`2"}`))
	if big1.body != big2.body {
		t.Fatalf("huge variables: answers differ:\n%s\n%s", big1.body, big2.body)
	}
	// Past the guard's 128 KiB: refused before the cache, never a hit.
	for i := range 2 {
		r := c.gql(t, c.ent, q(membersVars, `,"variables":{"n":2,"s":"WA","pad":"`+pad+pad+`"}`))
		if r.status != 413 || r.cs() != "" {
			t.Fatalf("a 200 KiB body, %d: %s, want 413 without Cache-Status", i, r)
		}
	}
}

// noDSN fails if a log holds a DSN the gateway or recordsd was given.
func (c *cacheEnv) noDSN(t *testing.T) {
	for _, path := range c.s.Logs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, dsn := range c.dsns {
			u, err := url.Parse(dsn)
			if err != nil {
				t.Fatal(err)
			}
			needles := []string{dsn, u.Host + u.Path}
			if u.User != nil {
				needles = append(needles, u.User.String()+"@")
			}
			for _, n := range needles {
				if strings.Contains(string(b), n) {
					t.Errorf("%s holds a DSN (%.12s…)", path, n)
				}
			}
		}
	}
}

// cacheLegislators writes a legislators file of three WA members whose
// names carry the round and sort before every seeded name.
func cacheLegislators(t *testing.T, round int) string {
	var b strings.Builder
	for i := range 3 {
		fmt.Fprintf(&b, "- id:\n    bioguide: Q%06d\n  name:\n    first: Round%d\n    last: Member%d\n    official_full: Aaa Round%d Member%d\n", i, round, i, round, i)
		fmt.Fprintf(&b, "  terms:\n  - type: rep\n    start: '2025-01-03'\n    end: '2027-01-03'\n    state: WA\n    district: %d\n    party: Independent\n", i+1)
	}
	path := filepath.Join(t.TempDir(), fmt.Sprintf("cache-legislators-%d.yaml", round))
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
