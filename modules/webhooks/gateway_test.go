package webhooks

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	_ "github.com/civicgate/civicgate/modules/auth"
	_ "github.com/civicgate/civicgate/modules/ratelimit"
)

// adminPort is this package's caddytest admin port (each package its own).
const adminPort = 2996

type gateway struct {
	tester  *caddytest.Tester
	base    string
	logPath string
}

// config is the test gateway's Caddyfile; loopback is the
// insecure_allow_loopback line ("" for none).
func config(port, httpsPort int, logPath, loopback string) string {
	return fmt.Sprintf(`{
	admin localhost:%[1]d
	http_port %[2]d
	https_port %[3]d
	grace_period 1ns
	log {
		output file %[4]s
		level DEBUG
	}
	civic_auth {
		keys postgres {env.CIVIC_WH_TEST_DSN}
		environment live
		identity_secret {env.CIVIC_WH_TEST_SECRET}
		cache_ttl 100ms
		tier free 30/m bills members
		tier paid 1000/m bills members regulatory_filings changes
	}
	civic_webhooks {
		database {env.CIVIC_WH_TEST_DSN}
		secret_key {env.CIVIC_WH_TEST_SECRET}
		poll_interval 20ms
		tier free 30/m bills members
		tier paid 1000/m bills members regulatory_filings changes
		event_families bills members regulatory_filings federal_budgets lobbying_disclosures
		%[5]s
	}
}
http://localhost:%[2]d {
	log {
		output file %[4]s
	}
	@webhooks path /v1/changes /v1/webhook-endpoints /v1/webhook-endpoints/*
	handle @webhooks {
		civic_auth {
			require_family changes
		}
		civic_rate_limit
		civic_webhooks {
			max_endpoints 3
		}
	}
}
`, adminPort, port, httpsPort, logPath, loopback)
}

func startGateway(t *testing.T, dsn, loopback string) *gateway {
	t.Helper()
	t.Setenv("CIVIC_WH_TEST_DSN", dsn)
	t.Setenv("CIVIC_WH_TEST_SECRET", "s3cr3t-identity-material-0123456789abcdef")
	port := testenv.FreePort(t)
	g := &gateway{base: fmt.Sprintf("http://localhost:%d", port), logPath: filepath.Join(t.TempDir(), "caddy.log")}
	g.tester = caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort, TestRequestTimeout: 20 * time.Second})
	g.tester.InitServer(config(port, testenv.FreePort(t), g.logPath, loopback), "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	return g
}

type reply struct {
	status int
	body   string
	header http.Header
}

func (g *gateway) do(t *testing.T, method, path, key, body string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, g.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := g.tester.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, string(b), resp.Header}
}

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.body), &m); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return m
}

func want(t *testing.T, r reply, status int, body string) {
	t.Helper()
	if r.status != status || (body != "" && r.body != body) {
		t.Fatalf("got %d %s, want %d %s", r.status, r.body, status, body)
	}
	if r.status != http.StatusNoContent && r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("content type %q", r.header.Get("Content-Type"))
	}
}
