package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// TestGrantThroughTheGateway (the built binaries, the shipped Caddyfiles,
// PostgreSQL, Redis; docs/design.md D81): `civicgate keys grant` raises a
// running organization's quota and cost budget without a reload — the
// gateway's headers show the granted figures on /bills and /v1/graphql and
// the 429 comes at the granted quota — and `keys grant end` brings the
// tier's figures back. The end reached by the clock alone is tested with an
// injected clock in modules/auth (TestGrantTwoGateways).
func TestGrantThroughTheGateway(t *testing.T) {
	t.Parallel()
	s := stack.New(t, &bins)
	s.Prepare()
	s.StartRecordsd()
	s.StartGateway("caddyfile/Caddyfile.local")
	key, _ := s.IssueKey("grantco", "free", "live")
	policy := func(method, path, body string) (int, string) {
		x := send(t, s, method, path, key, body)
		return x.status, x.header.Get("RateLimit-Policy")
	}
	if _, p := policy(http.MethodGet, "/bills?limit=1", ""); p != `"free";q=30;w=60` {
		t.Fatalf("before the grant: %q", p)
	}
	out := s.Run(s.Bins.Civicgate, "keys", "grant", "grantco", "--requests", "45", "--cost", "80000", "--until", "1h")
	if !strings.Contains(out, "granted requests 45, cost 80000, until ") {
		t.Fatalf("keys grant said %q", out)
	}
	stack.WaitFor(t, 5*time.Second, "the gateway to apply the grant", func() error {
		if _, p := policy(http.MethodGet, "/bills?limit=1", ""); p != `"free";q=45;w=60` {
			return fmt.Errorf("RateLimit-Policy %q", p)
		}
		return nil
	})
	if _, p := policy(http.MethodPost, "/v1/graphql", billsDoc); p != `"free";q=45;w=60, "free-cost";q=80000;w=3600` {
		t.Fatalf("/v1/graphql under the grant: %q", p)
	}
	// Spend the rest of the granted minute: the refusal names the granted policy.
	var last exchange
	for range 45 {
		if last = send(t, s, http.MethodGet, "/bills?limit=1", key, ""); last.status != http.StatusOK {
			break
		}
	}
	if last.status != http.StatusTooManyRequests || last.header.Get("RateLimit-Policy") != `"free";q=45;w=60` {
		t.Fatalf("past the granted quota: %d %q", last.status, last.header.Get("RateLimit-Policy"))
	}
	s.Run(s.Bins.Civicgate, "keys", "grant", "end", "grantco")
	stack.WaitFor(t, 5*time.Second, "the tier's figures to return", func() error {
		if _, p := policy(http.MethodGet, "/bills?limit=1", ""); p != `"free";q=30;w=60` {
			return fmt.Errorf("RateLimit-Policy %q", p)
		}
		return nil
	})
	if out := s.Run(s.Bins.Civicgate, "audit", "--org", "grantco"); !strings.Contains(out, "org.grant_end") || !strings.Contains(out, "org.grant ") {
		t.Fatalf("audit log:\n%s", out)
	}
}
