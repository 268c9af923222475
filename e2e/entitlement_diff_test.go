package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/modules/contract"
)

// rootCatalog is every Query root field with a fixed selection (fixed
// arguments, so two selections of one response key always merge).
var rootCatalog = []struct{ field, sel string }{
	{"bills", `bills(input: {limit: 1}) { items { id } }`},
	{"bill", `bill(id: "hr1-118") { id }`},
	{"members", `members(input: {limit: 1}) { items { member_id } }`},
	{"regulatoryFilings", `regulatoryFilings(input: {limit: 1}) { items { id } }`},
	{"federalBudgets", `federalBudgets(input: {dataset: OUTLAYS, limit: 1}) { items { id } }`},
	{"lobbyingDisclosures", `lobbyingDisclosures(input: {limit: 1}) { items { id } }`},
}

// freeFields are the root fields of the free tier's families (bills, members).
var freeFields = map[string]bool{"bills": true, "bill": true, "members": true}

// docGen writes random valid documents built to evade a guard: several
// operations, fragments shared between them and chained, inline fragments
// with and without a type condition, aliases and directives.
type docGen struct {
	rng   *rand.Rand
	skips bool // also write directives that really skip (@skip(if: true))
}

type genDoc struct {
	text   string
	opName string
}

func (g *docGen) directive() string {
	switch g.rng.IntN(6) {
	case 0:
		return " @include(if: true)"
	case 1:
		return " @skip(if: false)"
	case 2:
		if g.skips {
			return " @skip(if: true)"
		}
	case 3:
		if g.skips {
			return " @include(if: false)"
		}
	}
	return ""
}

// selection writes 1–2 items into a selection set; fragments may spread only
// fragments after self (no cycles), operations (self = -1) any fragment.
// Spreads are recorded in uses.
func (g *docGen) selection(self, nFrags, depth int, uses map[int]bool) string {
	var items []string
	for n := 1 + g.rng.IntN(2); len(items) < n; {
		switch k := g.rng.IntN(4); {
		case k <= 1:
			r := rootCatalog[g.rng.IntN(len(rootCatalog))]
			sel := r.sel
			i := strings.Index(sel, ") {")
			sel = sel[:i+1] + g.directive() + sel[i+1:]
			if g.rng.IntN(3) == 0 {
				sel = "a_" + r.field + ": " + sel
			}
			items = append(items, sel)
		case k == 2 && self+1 < nFrags:
			j := self + 1 + g.rng.IntN(nFrags-self-1)
			uses[j] = true
			items = append(items, fmt.Sprintf("...F%d%s", j, g.directive()))
		case depth < 2:
			cond := ""
			if g.rng.IntN(2) == 0 {
				cond = " on Query"
			}
			items = append(items, "..."+cond+g.directive()+" { "+g.selection(self, nFrags, depth+1, uses)+" }")
		default:
			items = append(items, "__typename")
		}
	}
	return strings.Join(items, " ")
}

func (g *docGen) next() genDoc {
	nOps, nFrags := 1+g.rng.IntN(4), g.rng.IntN(5)
	frags := make([]string, nFrags)
	fragUses := make([]map[int]bool, nFrags)
	for i := range frags {
		fragUses[i] = map[int]bool{}
		frags[i] = g.selection(i, nFrags, 0, fragUses[i])
	}
	ops := make([]string, nOps)
	reach := map[int]bool{}
	var visit func(i int)
	visit = func(i int) {
		if !reach[i] {
			reach[i] = true
			for j := range fragUses[i] {
				visit(j)
			}
		}
	}
	for i := range ops {
		uses := map[int]bool{}
		ops[i] = g.selection(-1, nFrags, 0, uses)
		for j := range uses {
			visit(j)
		}
	}
	// Every fragment must be reachable from an operation (validation's
	// NoUnusedFragments): spread the unreachable ones in the last operation.
	for j := range frags {
		if !reach[j] {
			ops[nOps-1] += fmt.Sprintf(" ...F%d", j)
			visit(j)
		}
	}
	var b strings.Builder
	for i, op := range ops {
		fmt.Fprintf(&b, "query O%d { %s } ", i, op)
	}
	for i, f := range frags {
		fmt.Fprintf(&b, "fragment F%d on Query { %s } ", i, f)
	}
	return genDoc{text: b.String(), opName: fmt.Sprintf("O%d", g.rng.IntN(nOps))}
}

// guardRecorder stands between the gateway and recordsd and keeps, per
// request id, the root fields graphql_guard attributed to the request.
type guardRecorder struct {
	mu   sync.Mutex
	seen map[string]string
}

func (r *guardRecorder) get(id string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.seen[id]
	return v, ok
}

// differentialCaddyfiles copies the shipped Caddyfiles to dir with one
// change: the /v1/graphql route also sends {graphql.root_fields} upstream.
func differentialCaddyfiles(t *testing.T, root, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "caddyfile", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(f) == "routes.caddy" {
			const anchor = "\t\trewrite /graphql\n"
			if !bytes.Contains(b, []byte(anchor)) {
				t.Fatalf("routes.caddy has no %q line to anchor the test header on", anchor)
			}
			b = bytes.Replace(b, []byte(anchor), []byte(anchor+"\t\theader_up X-Guard-Root-Fields {graphql.root_fields}\n"), 1)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "Caddyfile.local")
}

// TestGuardAttributesWhatTheBackendExecutes is the differential test of issue
// 15: for generated documents, the root fields graphql_guard attributes to the
// selected operation (sent upstream as {graphql.root_fields}) must equal the
// root fields recordsd executes for it (the response keys of its answer). A
// free key is refused exactly when one of them lies outside its families,
// and recordsd — asked directly with a free identity — refuses exactly the
// same documents by itself.
func TestGuardAttributesWhatTheBackendExecutes(t *testing.T) {
	s := stack.New(t, &bins)
	s.Prepare()
	enterprise, _ := s.IssueKey("diffco", "enterprise", "live")
	// The free tier allows 30 requests a minute: a fresh free key (of a
	// fresh organization: two live keys each) every 25 documents.
	var free string
	freeUses := 0
	freeKey := func() string {
		if freeUses%25 == 0 {
			free, _ = s.IssueKey(fmt.Sprintf("diffsmall%d", freeUses/25), "free", "live")
		}
		freeUses++
		return free
	}
	s.StartRecordsd()
	backend, err := url.Parse("http://" + s.Getenv("RECORDSD_LISTEN"))
	if err != nil {
		t.Fatal(err)
	}
	rec := &guardRecorder{seen: map[string]string{}}
	proxy := httputil.NewSingleHostReverseProxy(backend)
	recorder := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.seen[r.Header.Get("X-Request-Id")] = r.Header.Get("X-Guard-Root-Fields")
		rec.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	defer recorder.Close()
	s.Setenv("CIVICGATE_UPSTREAM", strings.TrimPrefix(recorder.URL, "http://"))
	// What reaches recordsd is this test's subject: the response cache (its own tests: e2e/cache_test.go) stays off.
	s.Setenv("CIVICGATE_CACHE", "off")
	s.StartGateway(differentialCaddyfiles(t, s.Root, t.TempDir()))

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	secret := []byte(s.Getenv("CIVIC_IDENTITY_SECRET"))
	for _, mode := range []struct {
		name  string
		skips bool
		docs  int
	}{{"no field skipped", false, 150}, {"some fields skipped", true, 60}} {
		t.Run(mode.name, func(t *testing.T) {
			g := &docGen{rng: rand.New(rand.NewPCG(seed, 15)), skips: mode.skips}
			limited := 0
			for i := 0; i < mode.docs; i++ {
				d := g.next()
				body, _ := json.Marshal(map[string]any{"query": d.text, "operationName": d.opName})
				checked, executed, ok := diffOne(t, s, rec, enterprise, body)
				if !ok {
					// Over a document limit (root fields, aliases): the
					// generator nests freely; draw another, within a bound.
					if limited++; limited > mode.docs/5 {
						t.Fatalf("%d generated documents refused for limits; the last:\n%s", limited, d.text)
					}
					i--
					continue
				}
				if !mode.skips && !slices.Equal(checked, executed) {
					t.Fatalf("document %d: guard checked %v, backend executed %v\n%s (operation %s)", i, checked, executed, d.text, d.opName)
				}
				if mode.skips && !isSubset(executed, checked) {
					t.Fatalf("document %d: backend executed %v, guard checked only %v\n%s (operation %s)", i, executed, checked, d.text, d.opName)
				}
				// The free key: refused exactly when the guard saw a paid field.
				resp, got := post(t, s, freeKey(), body)
				if wantRefused := !allFree(checked); wantRefused != (resp.StatusCode == http.StatusForbidden) ||
					(wantRefused && got != `{"error":"Tier not entitled to this endpoint family"}`) ||
					(!wantRefused && resp.StatusCode != http.StatusOK) {
					t.Fatalf("document %d with a free key (checked %v) = %d %s\n%s", i, checked, resp.StatusCode, got, d.text)
				}
				// recordsd alone, with a free identity: refused exactly when it
				// would execute a paid field.
				status, got := postRecordsd(t, s, secret, body)
				if wantRefused := !allFree(executed); wantRefused != (status == http.StatusForbidden) {
					t.Fatalf("document %d straight to recordsd with a free identity (executes %v) = %d %s\n%s", i, executed, status, got, d.text)
				}
			}
		})
	}
}

// diffOne sends body with a key entitled to everything and returns the root
// fields the guard attributed and the ones recordsd executed; ok is false for
// a document the guard refused for a limit (never sent upstream).
func diffOne(t *testing.T, s *stack.Stack, rec *guardRecorder, key string, body []byte) (checked, executed []string, ok bool) {
	t.Helper()
	resp, got := post(t, s, key, body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s = %d %s", body, resp.StatusCode, got)
	}
	var answer struct {
		Data   map[string]json.RawMessage `json:"data"`
		Errors []struct {
			Extensions struct {
				Code string `json:"code"`
			} `json:"extensions"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(got), &answer); err != nil {
		t.Fatalf("%s = %s (%v)", body, got, err)
	}
	if len(answer.Errors) > 0 {
		if code := answer.Errors[0].Extensions.Code; answer.Data == nil && (code == "TOO_MANY_ROOT_FIELDS" || code == "TOO_MANY_ALIASES" || code == "QUERY_TOO_COMPLEX") {
			return nil, nil, false
		}
		t.Fatalf("%s = %s", body, got)
	}
	header, seen := rec.get(resp.Header.Get("X-Request-Id"))
	if !seen {
		t.Fatalf("request %s never reached the upstream", resp.Header.Get("X-Request-Id"))
	}
	if header != "" {
		checked = strings.Split(header, ",")
	}
	set := map[string]bool{}
	for k := range answer.Data {
		if k != "__typename" {
			set[strings.TrimPrefix(k, "a_")] = true
		}
	}
	for f := range set {
		executed = append(executed, f)
	}
	sort.Strings(checked)
	sort.Strings(executed)
	return checked, executed, true
}

func post(t *testing.T, s *stack.Stack, key string, body []byte) (*http.Response, string) {
	t.Helper()
	return do(t, s, http.MethodPost, "/v1/graphql", key, "application/json", bytes.NewReader(body))
}

func postRecordsd(t *testing.T, s *stack.Stack, secret, body []byte) (int, string) {
	t.Helper()
	tok, err := contract.SignIdentity(secret, contract.Caller{KeyID: "key_diff", Org: "diffsmall", Tier: "free", Env: "live", Families: []string{"bills", "members"}}, time.Now(), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+s.Getenv("RECORDSD_LISTEN")+"/graphql", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(contract.IdentityHeader, tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func allFree(fields []string) bool {
	for _, f := range fields {
		if !freeFields[f] {
			return false
		}
	}
	return true
}

func isSubset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
