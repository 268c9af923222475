// Package otherbackend tests the README's worked example: the civicgate
// modules in front of a GraphQL backend that is not recordsd, configured only
// through examples/other-backend/Caddyfile (keys file, in-memory limits, the
// backend's own schema and families), run as the real binary.
package otherbackend

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/stack"
	"github.com/civicgate/civicgate/internal/testenv"
	"github.com/civicgate/civicgate/modules/contract"
)

// upstream is the "other" GraphQL backend: it records what reached it and
// answers every request with a fixed page of books.
type upstream struct {
	mu       sync.Mutex
	requests []*http.Request
	bodies   []string
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.requests = append(u.requests, r.Clone(r.Context()))
	u.bodies = append(u.bodies, string(b))
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"data":{"books":{"nodes":[{"title":"Middlemarch"}],"endCursor":null}}}`)
}

func (u *upstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.requests)
}

func (u *upstream) last() (*http.Request, string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.requests[len(u.requests)-1], u.bodies[len(u.bodies)-1]
}

var liveKey = regexp.MustCompile(`cg_live_[0-9A-Za-z]+`)

func TestLibraryBehindCivicgate(t *testing.T) {
	var bins stack.Binaries
	defer bins.Remove()
	s := stack.New(t, &bins)
	up := &upstream{}
	backend := httptest.NewServer(up)
	t.Cleanup(backend.Close)

	dir := filepath.Join(s.Root, "examples", "other-backend")
	keysFile := filepath.Join(s.Dir, "keys.json")
	port := testenv.FreePort(t)
	secret := s.Getenv("CIVIC_IDENTITY_SECRET")
	s.Setenv("KEYS_FILE", keysFile)
	s.Setenv("SITE_ADDRESS", "http://127.0.0.1:"+strconv.Itoa(port))
	s.Setenv("UPSTREAM", strings.TrimPrefix(backend.URL, "http://"))
	s.Setenv("SCHEMA_FILE", filepath.Join(dir, "library.graphqls"))
	caddyfile := filepath.Join(dir, "Caddyfile")

	issue := func(org, tier string) string {
		out := s.Run(bins.Civicgate, "keys", "issue", "--file", keysFile, "--org", org, "--tier", tier, "--env", "live")
		key := liveKey.FindString(out)
		if key == "" {
			t.Fatal("keys issue --file printed no key")
		}
		return key
	}
	reader, partner := issue("city-school", "reader"), issue("county-archive", "partner")
	if out, err := s.RunErr(bins.Civicgate, "validate", "--config", caddyfile, "--adapter", "caddyfile"); err != nil {
		t.Fatalf("validate: %v\n%s", err, out)
	}
	s.Spawn("civicgate", bins.Civicgate, "run", "--config", caddyfile, "--adapter", "caddyfile")
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/graphql"
	stack.WaitFor(t, 30*time.Second, "example gateway", func() error {
		resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})

	post := func(key, query string) (int, http.Header, string) {
		t.Helper()
		body, _ := json.Marshal(map[string]string{"query": query})
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}

	t.Run("entitled query reaches the backend with an identity, not the key", func(t *testing.T) {
		before := up.count()
		status, _, body := post(reader, `{ books(first: 5) { nodes { title author { name } } } }`)
		if status != 200 || !strings.Contains(body, "Middlemarch") || up.count() != before+1 {
			t.Fatalf("%d %s (upstream saw %d new)", status, body, up.count()-before)
		}
		r, _ := up.last()
		if r.Header.Get("Authorization") != "" {
			t.Fatal("Authorization forwarded upstream")
		}
		claims, err := contract.VerifyIdentity([]byte(secret), r.Header.Get("X-Civic-Identity"), time.Now())
		if err != nil || claims.Tier != "reader" {
			t.Fatalf("identity %+v %v", claims, err)
		}
	})
	for _, tc := range []struct {
		name, key, query string
		status           int
		body             string
	}{
		{"family outside the tier", reader, `{ loans(memberId: "m1") { due } }`, 403, `{"error":"Tier not entitled to this endpoint family"}`},
		{"no key", "", `{ books { endCursor } }`, 401, `{"error":"Missing bearer token"}`},
		{"mutation refused at the edge", partner, `mutation { addBook }`, 200, ""},
		{"unknown field refused at the edge", partner, `{ books { nodes { isbn } } }`, 200, ""},
		{"too deep", partner, `{ authors { books { author { books { author { books { title } } } } } } }`, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := up.count()
			status, _, body := post(tc.key, tc.query)
			if status != tc.status || (tc.body != "" && body != tc.body) || (tc.body == "" && !strings.HasPrefix(body, `{"data":null,"errors":[`)) {
				t.Fatalf("%d %s", status, body)
			}
			if up.count() != before {
				t.Fatal("a refused request reached the backend")
			}
		})
	}
	t.Run("partner owns loans", func(t *testing.T) {
		if status, _, body := post(partner, `{ loans(memberId: "m1") { due } }`); status != 200 {
			t.Fatalf("%d %s", status, body)
		}
	})
	t.Run("reader limited to 60/m", func(t *testing.T) {
		var status int
		var hdr http.Header
		var body string
		for i := 0; i < 61 && status != http.StatusTooManyRequests; i++ {
			status, hdr, body = post(reader, `{ books { endCursor } }`)
		}
		if status != http.StatusTooManyRequests || body != `{"error":"Rate limit exceeded"}` || hdr.Get("Retry-After") == "" {
			t.Fatalf("%d %s %v", status, body, hdr)
		}
	})
	t.Run("backend down is a JSON 502", func(t *testing.T) {
		backend.Close()
		status, _, body := post(partner, `{ books { endCursor } }`)
		if status != 502 || body != `{"error":"Bad Gateway"}` {
			t.Fatalf("%d %s", status, body)
		}
	})
	s.CheckLogs(t, reader, partner)
}
