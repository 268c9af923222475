package auth

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// countLookups wraps the running gateway's key store (PostgreSQL) so that the
// test can count the lookups that reach it. Called before the first request.
func countLookups(t *testing.T) *countingStore {
	t.Helper()
	app, err := caddy.ActiveContext().App("civic_auth")
	if err != nil {
		t.Fatal(err)
	}
	a := app.(*App)
	cs := &countingStore{store: a.store}
	a.store = cs
	return cs
}

// logLines returns the JSON log lines of path whose logger is name.
func logLines(t *testing.T, path, name string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["logger"] == name {
			out = append(out, m)
		}
	}
	return out
}

// TestKeyInURLGateway: through Caddy, a key in the URL gets the 400 before the
// header is read and without a PostgreSQL lookup; civic_auth logs the path at
// info and never the key or the query.
func TestKeyInURLGateway(t *testing.T) {
	dsn, pool := migratedDB(t)
	g := startGatewayWith(t, gatewayConfig{storeDSN: dsn, cacheTTL: "1m", separateAccessLog: true})
	lookups := countLookups(t)
	k := issue(t, pool, "acme", "enterprise", "live").Key
	secret := k[8:]
	for _, c := range []struct {
		url    string
		header []string
	}{
		{g.base + "/bills?limit=2&access_token=" + k, nil},
		{g.base + "/bills?limit=2&access_token=" + k, []string{"Authorization", "Bearer " + k}},
		{g.base + "/bills?api_key=cg%5Flive%5F" + secret, nil},
		{g.base + "/bills?api_key=cg%5flive%5f" + secret, []string{"Authorization", "Bearer not-a-key"}},
		{g.base + "/bills/" + k + "?limit=2", nil},
	} {
		expectRefusal(t, get(t, c.url, c.header...), 400, bodyKeyInURLText)
	}
	if n := lookups.n.Load(); n != 0 {
		t.Fatalf("%d PostgreSQL lookups for keys in URLs, want 0", n)
	}
	if all := g.upstream.all(); all != "" {
		t.Fatalf("refused requests reached the upstream:\n%s", all)
	}
	if got := get(t, g.base+"/bills?limit=2", "Authorization", "Bearer "+k); got.status != 200 || lookups.n.Load() != 1 {
		t.Fatalf("control: %d %q, %d lookups", got.status, got.body, lookups.n.Load())
	}

	lines := logLines(t, g.logPath, "http.handlers.civic_auth")
	var refusals int
	for _, l := range lines {
		if l["msg"] == "API key sent in the URL; refused" {
			refusals++
			if l["level"] != "info" || (l["path"] != "/bills" && l["path"] != "/bills/cg_live_REDACTED") {
				t.Errorf("log line %v", l)
			}
		}
	}
	if refusals != 5 {
		t.Fatalf("%d refusals logged, want 5: %v", refusals, lines)
	}
	logs, err := os.ReadFile(g.logPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(logs), secret[:keystore.ShapeMinSecret]) || strings.Contains(string(logs), "access_token") {
		t.Fatal("the gateway's own logs hold the key or the query")
	}
}

// TestFailedLookupLimitGateway: with failed_lookups 5/m, a client (Caddy's
// client IP from X-Forwarded-For of a trusted proxy) that sent 5 unknown keys
// gets 429 for the 6th without a PostgreSQL lookup; its cached valid key still
// works, its uncached valid key waits, and another client is unaffected.
func TestFailedLookupLimitGateway(t *testing.T) {
	const limit = 5
	dsn, pool := migratedDB(t)
	g := startGatewayWith(t, gatewayConfig{
		storeDSN: dsn, cacheTTL: "1m",
		authOptions:   "failed_lookups " + strconv.Itoa(limit) + "/m",
		globalOptions: "servers {\n\t\ttrusted_proxies static 127.0.0.1/32 ::1/128\n\t}",
	})
	lookups := countLookups(t)
	valid := issue(t, pool, "acme", "enterprise", "live").Key
	later := issue(t, pool, "other", "enterprise", "live").Key
	const clientA, clientB = "203.0.113.7", "198.51.100.9"
	from := func(client, key string) response {
		return get(t, g.base+"/bills", "Authorization", "Bearer "+key, "X-Forwarded-For", client)
	}
	random := func() string {
		k, err := keystore.NewKey("live")
		if err != nil {
			t.Fatal(err)
		}
		return k
	}

	if got := from(clientA, valid); got.status != 200 {
		t.Fatalf("valid key: %d %q", got.status, got.body)
	}
	for i := 0; i < limit; i++ {
		expectRefusal(t, from(clientA, random()), 401, `{"error":"Invalid API key"}`)
	}
	if n := lookups.n.Load(); n != 1+limit {
		t.Fatalf("%d PostgreSQL lookups, want %d", n, 1+limit)
	}
	got := from(clientA, random())
	expectRefusal(t, got, 429, `{"error":"Rate limit exceeded"}`)
	if s, err := strconv.Atoi(got.header.Get("Retry-After")); err != nil || s < 1 || s > int(time.Minute/limit/time.Second) {
		t.Fatalf("Retry-After %q", got.header.Get("Retry-After"))
	}
	expectRefusal(t, from(clientA, later), 429, `{"error":"Rate limit exceeded"}`) // valid, but not cached yet
	if n := lookups.n.Load(); n != 1+limit {
		t.Fatalf("%d PostgreSQL lookups after the refusals, want still %d", n, 1+limit)
	}
	if got := from(clientA, valid); got.status != 200 || got.body != "upstream ok" {
		t.Fatalf("cached valid key from the limited client: %d %q", got.status, got.body)
	}
	expectRefusal(t, from(clientB, random()), 401, `{"error":"Invalid API key"}`)
	if got := from(clientB, later); got.status != 200 {
		t.Fatalf("another client's valid key: %d %q", got.status, got.body)
	}
	if n := lookups.n.Load(); n != 1+limit+2 {
		t.Fatalf("%d PostgreSQL lookups, want %d", n, 1+limit+2)
	}
}
