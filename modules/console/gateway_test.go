package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	_ "github.com/civicgate/civicgate/modules/auth"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/console/consolestore"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// The console as Caddy runs it, next to the webhook API it mirrors: one
// configuration with civic_auth (keys in PostgreSQL), the civic_webhooks app
// and handler on an API site, and civic_console on a site of its own, over a
// fresh database.

// adminPort is this package's caddytest admin port (each package its own).
const adminPort = 2987

// changeEventsDDL is the documented change_events table
// (backend/migrations/sql/0100_sync.sql, copied: modules never import the
// backend; modules/webhooks/internal/feedtest keeps the same copy).
const changeEventsDDL = `CREATE TABLE IF NOT EXISTS change_events (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id        uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
    family          text NOT NULL CHECK (family IN ('bills', 'members', 'regulatory_filings', 'federal_budgets', 'lobbying_disclosures')),
    record_id       text NOT NULL,
    type            text NOT NULL CHECK (type IN ('created', 'updated', 'deleted')),
    changed_fields  text[] NOT NULL DEFAULT '{}',
    record          jsonb NOT NULL,
    source          text NOT NULL DEFAULT '',
    occurred_at     timestamptz NOT NULL DEFAULT now()
);`

// testTiers are the tier lines of every module in the test gateway.
const testTiers = `tier free 30/m bills members
		tier paid 1000/m bills members regulatory_filings changes`

// testMaxEndpoints is the endpoint limit, set once on the API's handler (the
// console follows it: docs/design.md D43).
const testMaxEndpoints = 5

func gatewayConfig(apiPort, consolePort, httpsPort int) string {
	return fmt.Sprintf(`{
	admin localhost:%[1]d
	http_port %[2]d
	https_port %[4]d
	grace_period 1ns
	civic_auth {
		keys postgres {env.CIVIC_CONSOLE_TEST_DSN}
		environment live
		identity_secret {env.CIVIC_CONSOLE_TEST_SECRET}
		cache_ttl 50ms
		negative_cache_ttl 50ms
		%[5]s
	}
	civic_webhooks {
		database {env.CIVIC_CONSOLE_TEST_DSN}
		secret_key {env.CIVIC_CONSOLE_TEST_SECRET}
		deliver off
		%[5]s
	}
}
http://localhost:%[2]d {
	@webhooks path /v1/changes /v1/webhook-endpoints /v1/webhook-endpoints/*
	handle @webhooks {
		civic_auth {
			require_family changes
		}
		civic_webhooks {
			max_endpoints %[6]d
		}
	}
}
http://localhost:%[3]d {
	civic_console {
		database {env.CIVIC_CONSOLE_TEST_DSN}
		%[5]s
	}
}
`, adminPort, apiPort, consolePort, httpsPort, testTiers, testMaxEndpoints)
}

// gateway is the running test configuration and its database.
type gateway struct {
	pool         *pgxpool.Pool
	dsn          string
	api, console string
	client       *http.Client
}

func startGateway(t *testing.T) *gateway {
	t.Helper()
	dsn := testenv.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, changeEventsDDL); err != nil {
		t.Fatal(err)
	}
	if err := consolestore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CIVIC_CONSOLE_TEST_DSN", dsn)
	t.Setenv("CIVIC_CONSOLE_TEST_SECRET", "console-test-material-0123456789abcdef-0123")
	apiPort, consolePort := testenv.FreePort(t), testenv.FreePort(t)
	tester := caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort, TestRequestTimeout: 20 * time.Second})
	tester.InitServer(gatewayConfig(apiPort, consolePort, testenv.FreePort(t)), "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	return &gateway{pool: pool, dsn: dsn, api: fmt.Sprintf("http://localhost:%d", apiPort), console: fmt.Sprintf("http://localhost:%d", consolePort),
		client: &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// org is an organization of the key store with one live key.
type org struct {
	name, id, key string
}

func (g *gateway) newOrg(t *testing.T, name, tier string) org {
	t.Helper()
	is, err := keystore.Issue(t.Context(), g.pool, name, tier, keystore.EnvLive)
	if err != nil {
		t.Fatal(err)
	}
	return org{name: name, id: is.OrgID, key: is.Key}
}

// session signs a member in (as a sign-in link would) and returns the
// session token.
func (g *gateway) session(t *testing.T, o org, role string) string {
	t.Helper()
	tok, err := consolestore.NewSession(t.Context(), g.pool, consolestore.Identity{Email: role + "@" + o.name + ".example", OrgID: o.id, Role: role},
		"link", "192.0.2.1", consolestore.Timeouts{Idle: time.Hour, Lifetime: 12 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// reply is an answer's status and body.
type reply struct {
	code int
	body string
}

func (g *gateway) send(t *testing.T, req *http.Request) reply {
	t.Helper()
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{resp.StatusCode, string(b)}
}

// apiDo sends an API request with key (a JSON body when body is not "").
func (g *gateway) apiDo(t *testing.T, key, method, path, body string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, g.api+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return g.send(t, req)
}

// consoleDo sends a console request with a session (a form when form is
// not nil), as the console's own pages do.
func (g *gateway) consoleDo(t *testing.T, session, method, path string, form url.Values) reply {
	t.Helper()
	var rd io.Reader
	if form != nil {
		rd = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, g.console+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: SessionCookie, Value: session})
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", g.console)
	}
	return g.send(t, req)
}

// createEndpoint registers an endpoint through the API and returns its id.
func (g *gateway) createEndpoint(t *testing.T, key, target string) string {
	t.Helper()
	r := g.apiDo(t, key, http.MethodPost, "/v1/webhook-endpoints", `{"url":"`+target+`"}`)
	var e struct{ ID string }
	if r.code != http.StatusCreated || json.Unmarshal([]byte(r.body), &e) != nil || e.ID == "" {
		t.Fatalf("create %s: %d %s", target, r.code, r.body)
	}
	return e.ID
}

// endpoints counts the organization's endpoints and their queued deliveries
// in the database.
func (g *gateway) endpoints(t *testing.T, orgID string) (endpoints, deliveries int) {
	t.Helper()
	err := g.pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM civicgate.webhook_endpoints WHERE org_id = $1),
		(SELECT count(*) FROM civicgate.webhook_deliveries d JOIN civicgate.webhook_endpoints e ON e.id = d.endpoint_id WHERE e.org_id = $1)`,
		orgID).Scan(&endpoints, &deliveries)
	if err != nil {
		t.Fatal(err)
	}
	return endpoints, deliveries
}

// awaitAPI polls until key's list of endpoints answers code (a key store
// change reaches the gateway's cache through NOTIFY, within its TTL).
func (g *gateway) awaitAPI(t *testing.T, key string, code int) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("the API to answer %d", code), func() error {
		if r := g.apiDo(t, key, http.MethodGet, "/v1/webhook-endpoints", ""); r.code != code {
			return fmt.Errorf("the API still answers %d %s", r.code, r.body)
		}
		return nil
	})
}
