package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestServeMetricsListener: `serve --metrics-listen` serves /metrics on its own address, counting the API's
// requests, while the API's listener (the one the gateway proxies to) answers /metrics with its 404.
func TestServeMetricsListener(t *testing.T) {
	t.Setenv("DATABASE_URL", testenv.Postgres(t))
	t.Setenv("RECORDSD_CURSOR_SECRET", "0123456789abcdef0123456789abcdef")
	t.Setenv("CIVIC_IDENTITY_SECRET", "")
	t.Setenv("RECORDSD_METRICS_LISTEN", "")
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--listen", addr, "--metrics-listen", metricsAddr, "--dev-insecure-no-identity", "--migrate"})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve returned %v", err)
		}
	}()
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	testenv.Eventually(t, 10*time.Second, "recordsd to become healthy", func() error {
		if status, body := get("http://" + addr + "/healthz"); status != 200 {
			return fmt.Errorf("/healthz: %d %s", status, body)
		}
		return nil
	})
	resp, err := http.Post("http://"+addr+"/graphql", "application/json", strings.NewReader(`{"query":"{ bills { nextCursor } }"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	status, body := get("http://" + metricsAddr + "/metrics")
	for _, want := range []string{
		`recordsd_http_request_duration_seconds_count{code="2xx",route="/graphql"} 1`,
		`recordsd_graphql_field_duration_seconds_count{field="bills",outcome="ok"} 1`,
		`recordsd_db_pool_total_conns{pool="primary"}`,
		`go_goroutines`,
	} {
		if status != 200 || !strings.Contains(body, want) {
			t.Errorf("metrics listener: %d, want a line %q", status, want)
		}
	}
	if status, body := get("http://" + addr + "/metrics"); status != 404 || body != `{"error":"Not Found"}` {
		t.Errorf("API listener /metrics = %d %s, want the JSON 404", status, body)
	}
	if status, body := get("http://" + metricsAddr + "/graphql"); status != 404 || body != `{"error":"Not Found"}` {
		t.Errorf("metrics listener /graphql = %d %s, want the JSON 404", status, body)
	}
}
