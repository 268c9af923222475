package ratelimit

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// scrape reads one sample of the admin endpoint's /metrics (0 if absent).
func (g *gateway) scrape(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := g.tester.Client.Get(fmt.Sprintf("http://localhost:%d/metrics", adminPort))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(body), "secret-key-id") {
		t.Fatal("key id in metrics")
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	return 0
}

// TestMetricsSurviveReload: the limiter's counters are monotonic across a
// reload that changes the configuration, the store's included
// (docs/operations.md "Metrics, logs and health"; every counter once read 0
// after a reload, so rates computed over a reload were wrong).
func TestMetricsSurviveReload(t *testing.T) {
	_, prefix := testenv.Redis(t)
	g := startGateway(t, redisGlobal("redis://"+testenv.RedisAddr(), prefix, ""), limitRoute("100/m"))
	const allowed = `civicgate_ratelimit_decisions_total{outcome="allowed"}`
	for range 3 {
		g.get(t, "/a", "k", "t")
	}
	before := g.scrape(t, allowed)
	if before < 3 {
		t.Fatalf("allowed %v before the reload, want ≥ 3", before)
	}
	g.reload(t, redisGlobal("redis://"+testenv.RedisAddr(), prefix+"x:", ""), limitRoute("50/m"))
	if after := g.scrape(t, allowed); after < before {
		t.Fatalf("allowed went from %v to %v across a reload", before, after)
	}
	g.get(t, "/a", "k", "t")
	if after := g.scrape(t, allowed); after < before+1 {
		t.Fatalf("allowed %v after one more request, want ≥ %v", after, before+1)
	}
}
