package e2e

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// keys is the set of credentials the suite issues.
type keys struct {
	enterprise, free, paidBeta, suspended, revoked, testEnv string
}

// TestGateway brings up the whole service from the shipped Caddyfile.local and
// checks it from the outside: typed queries of all five families with every
// filter, a full page walk, GET /bills, TLS and every error row of docs/api.md "Errors".
func TestGateway(t *testing.T) {
	s := stack.New(t, &bins)
	s.Prepare()
	var k keys
	k.enterprise, _ = s.IssueKey("acme", "enterprise", "live")
	k.free, _ = s.IssueKey("smallco", "free", "live")
	k.paidBeta, _ = s.IssueKey("betaco", "paid_beta", "live")
	k.suspended, _ = s.IssueKey("shadyco", "enterprise", "live")
	s.Run(bins.Civicgate, "keys", "suspend", "--org", "shadyco")
	var revokedID string
	k.revoked, revokedID = s.IssueKey("oldco", "enterprise", "live")
	s.Run(bins.Civicgate, "keys", "revoke", revokedID)
	k.testEnv, _ = s.IssueKey("acme", "enterprise", "test")
	s.StartRecordsd()
	gw := s.StartGateway("caddyfile/Caddyfile.local")

	t.Run("LoopbackOnly", func(t *testing.T) { testLoopbackOnly(t, gw.Pid()) })
	t.Run("TLS", func(t *testing.T) { testTLS(t, s) })
	t.Run("Families", func(t *testing.T) { testFamilies(t, s, k.enterprise) })
	t.Run("WalkAllBills", func(t *testing.T) { testWalk(t, s, k.enterprise) })
	t.Run("GetBills", func(t *testing.T) { testGetBills(t, s, k) })
	t.Run("Errors", func(t *testing.T) { testErrors(t, s, k) })
	t.Run("RateLimit", func(t *testing.T) { testRateLimit(t, s, k.free) })
	t.Run("NoSecretsInLogs", func(t *testing.T) {
		s.CheckLogs(t, k.enterprise, k.free, k.paidBeta, k.suspended, k.revoked, k.testEnv)
	})
}

func testTLS(t *testing.T, s *stack.Stack) {
	// Plain HTTP is redirected to HTTPS, never served.
	resp, err := s.Client.Get(s.HTTPURL + "/v1/graphql")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusPermanentRedirect || !strings.HasPrefix(resp.Header.Get("Location"), "https://") {
		t.Fatalf("http:// answered %d Location %q, want a 308 to https", resp.StatusCode, resp.Header.Get("Location"))
	}
	// TLS 1.1 and older are refused; 1.2 works.
	tr := s.Client.Transport.(*http.Transport)
	old := tr.TLSClientConfig.Clone()
	old.MinVersion, old.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	conn, err := tls.Dial("tcp", strings.TrimPrefix(s.HTTPSURL, "https://"), old)
	if err == nil {
		conn.Close()
		t.Fatal("a TLS 1.1 handshake succeeded")
	}
	v12 := tr.TLSClientConfig.Clone()
	v12.MaxVersion = tls.VersionTLS12
	conn, err = tls.Dial("tcp", strings.TrimPrefix(s.HTTPSURL, "https://"), v12)
	if err != nil {
		t.Fatalf("TLS 1.2 handshake: %v", err)
	}
	conn.Close()
}

func testGetBills(t *testing.T, s *stack.Stack, k keys) {
	resp, body := do(t, s, "GET", "/bills?limit=5", k.free, "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /bills: %d %s", resp.StatusCode, body)
	}
	var page struct {
		Items      []map[string]any `json:"items"`
		NextCursor *string          `json:"nextCursor"`
	}
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 5 || page.NextCursor == nil || page.Items[0]["officialTitle"] == nil {
		t.Fatalf("GET /bills page: %d items, next %v, first %v", len(page.Items), page.NextCursor, page.Items[0])
	}
	if resp.Header.Get("X-Request-Id") == "" || resp.Header.Get("RateLimit-Policy") == "" {
		t.Fatalf("missing X-Request-Id or RateLimit-Policy: %v", resp.Header)
	}
}

// testRateLimit spends the free tier's 30/min quota and checks the 429.
func testRateLimit(t *testing.T, s *stack.Stack, key string) {
	// GetBills spent one request of this key already; spend the rest.
	var last *http.Response
	var body string
	for i := 0; i < 40; i++ {
		last, body = do(t, s, "GET", "/bills?limit=1", key, "", nil)
		if last.StatusCode == http.StatusTooManyRequests {
			break
		}
		if last.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, last.StatusCode, body)
		}
	}
	if last.StatusCode != http.StatusTooManyRequests {
		t.Fatal("30/min free tier never refused 40 requests")
	}
	if body != `{"error":"Rate limit exceeded"}` {
		t.Fatalf("429 body %s", body)
	}
	ra, err := strconv.Atoi(last.Header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > 60 {
		t.Fatalf("Retry-After %q", last.Header.Get("Retry-After"))
	}
	if !strings.Contains(last.Header.Get("RateLimit-Policy"), `"free";q=30;w=60`) {
		t.Fatalf("RateLimit-Policy %q", last.Header.Get("RateLimit-Policy"))
	}
}
