package webhooks

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/webhooks/internal/feedtest"
)

// TestAPIThroughCaddy runs the gateway as Caddy runs it (civic_auth →
// civic_rate_limit → civic_webhooks, the sidecar app in the same process)
// against real PostgreSQL and a real loopback receiver.
func TestAPIThroughCaddy(t *testing.T) {
	db := feedtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := keystore.Migrate(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	issue := func(org, tier string) string {
		iss, err := keystore.Issue(ctx, db.Pool, org, tier, "live")
		if err != nil {
			t.Fatal(err)
		}
		return iss.Key
	}
	keyA, keyB, keyFree := issue("acme", "paid"), issue("other", "paid"), issue("small", "free")
	g := startGateway(t, db.DSN, "insecure_allow_loopback")
	rc := newHookReceiver(t)

	// Authentication and entitlement come first (civic_auth).
	want(t, g.do(t, "GET", "/v1/changes", "", ""), 401, `{"error":"Missing bearer token"}`)
	want(t, g.do(t, "GET", "/v1/changes", keyFree, ""), 403, `{"error":"Tier not entitled to this endpoint family"}`)

	// Create: the secret is shown once; families default to the tier's.
	r := g.do(t, "POST", "/v1/webhook-endpoints", keyA, `{"url":"`+rc.srv.URL+`/hook","description":"ours"}`)
	want(t, r, 201, "")
	created := r.json(t)
	id, secret := created["id"].(string), created["secret"].(string)
	if !strings.HasPrefix(secret, "whsec_") || !strings.HasPrefix(id, "we_") || r.header.Get("Location") != "/v1/webhook-endpoints/"+id {
		t.Fatalf("created %v", created)
	}
	if fmt.Sprint(created["families"]) != "[bills members regulatory_filings]" || created["url"] != rc.srv.URL+"/hook" || created["created_at"] == nil {
		t.Fatalf("created %v", created)
	}
	// Bad requests, in the errors-array form; entitlement in the error form.
	for _, tc := range []struct {
		body   string
		status int
		msg    string
	}{
		{`{"url":"https://10.0.0.1/x"}`, 400, "special-purpose address"},
		{`{"url":"http://example.org/x"}`, 400, "https required"},
		{`{}`, 400, "url is required"},
		{`{"url":"https://example.org","families":["nope"]}`, 400, "unknown family"},
		{`{"url":"https://example.org","families":["federal_budgets"]}`, 403, "Tier not entitled"},
		{`{"url":"https://example.org","extra":1}`, 400, "unknown member"},
		{`{"url":`, 400, "malformed JSON"},
		{`[]`, 400, "expected JSON object"},
	} {
		r := g.do(t, "POST", "/v1/webhook-endpoints", keyA, tc.body)
		if r.status != tc.status || !strings.Contains(r.body, tc.msg) {
			t.Fatalf("%s: %d %s", tc.body, r.status, r.body)
		}
		if tc.status == 400 && !strings.HasPrefix(r.body, `{"errors":[{"message":`) {
			t.Fatalf("400 body %s", r.body)
		}
	}
	// List and get: no secret anywhere.
	r = g.do(t, "GET", "/v1/webhook-endpoints", keyA, "")
	want(t, r, 200, "")
	if strings.Contains(r.body, "whsec_") || strings.Count(r.body, `"id":`) != 1 {
		t.Fatalf("list %s", r.body)
	}
	r = g.do(t, "GET", "/v1/webhook-endpoints/"+id, keyA, "")
	want(t, r, 200, "")
	if strings.Contains(r.body, "whsec_") || r.json(t)["status"] != "active" {
		t.Fatalf("get %s", r.body)
	}

	// Another organization sees nothing and can touch nothing: 404, never 403.
	want(t, g.do(t, "GET", "/v1/webhook-endpoints", keyB, ""), 200, `{"items":[]}`)
	notFound := `{"error":"Not Found"}`
	want(t, g.do(t, "GET", "/v1/webhook-endpoints/"+id, keyB, ""), 404, notFound)
	want(t, g.do(t, "GET", "/v1/webhook-endpoints/"+id+"/deliveries", keyB, ""), 404, notFound)
	want(t, g.do(t, "POST", "/v1/webhook-endpoints/"+id+"/replay", keyB, `{}`), 404, notFound)
	want(t, g.do(t, "POST", "/v1/webhook-endpoints/"+id+"/test", keyB, ""), 404, notFound)
	want(t, g.do(t, "POST", "/v1/webhook-endpoints/"+id+"/rotate-secret", keyB, ""), 404, notFound)
	want(t, g.do(t, "DELETE", "/v1/webhook-endpoints/"+id, keyB, ""), 404, notFound)
	want(t, g.do(t, "GET", "/v1/webhook-endpoints/we_nonexistent", keyA, ""), 404, notFound)

	// Events flow to the receiver, signed.
	db.Insert(t, "bills", 3)
	db.Insert(t, "federal_budgets", 1) // not subscribed (tier lacks it)
	got := rc.waitN(t, 3)
	wh, _ := standardwebhooks.NewWebhook(secret)
	for _, q := range got {
		if err := wh.Verify(q.body, q.h); err != nil {
			t.Fatalf("verification: %v", err)
		}
	}

	// The change feed: paging, cursors, families, errors.
	r = g.do(t, "GET", "/v1/changes?limit=2", keyA, "")
	want(t, r, 200, "")
	page := r.json(t)
	items := page["items"].([]any)
	if len(items) != 2 || page["nextCursor"] == nil {
		t.Fatalf("page 1 %s", r.body)
	}
	r = g.do(t, "GET", "/v1/changes?limit=2&after="+page["nextCursor"].(string), keyA, "")
	page2 := r.json(t)
	if len(page2["items"].([]any)) != 1 || page2["nextCursor"] != nil {
		t.Fatalf("page 2 %s (federal_budgets must be filtered out)", r.body)
	}
	first := items[0].(map[string]any)
	if first["type"] != "bills.updated" || first["cursor"] == nil || first["data"].(map[string]any)["family"] != "bills" {
		t.Fatalf("envelope %v", first)
	}
	want(t, g.do(t, "GET", "/v1/changes?families=federal_budgets", keyA, ""), 403, `{"error":"Tier not entitled to this endpoint family"}`)
	for _, q := range []string{"limit=0", "limit=101", "limit=x", "after=%%%", "after=bm9wZQ", "families=nope", "bogus=1"} {
		if r := g.do(t, "GET", "/v1/changes?"+q, keyA, ""); r.status != 400 || !strings.HasPrefix(r.body, `{"errors":[{"message":`) {
			t.Fatalf("%s: %d %s", q, r.status, r.body)
		}
	}
	want(t, g.do(t, "POST", "/v1/changes", keyA, "{}"), 405, `{"error":"Method Not Allowed"}`)

	// Deliveries list. The receiver has the requests, but an attempt's outcome
	// is recorded after its answer arrives (until then it is listed as pending
	// with the attempt counted): await the record, then check it.
	var dl map[string]any
	var d0 map[string]any
	testenv.Eventually(t, 30*time.Second, "the first delivery's outcome to be recorded", func() error {
		r = g.do(t, "GET", "/v1/webhook-endpoints/"+id+"/deliveries?limit=2", keyA, "")
		want(t, r, 200, "")
		dl = r.json(t)
		ds := dl["items"].([]any)
		if len(ds) != 2 || dl["nextCursor"] == nil {
			t.Fatalf("deliveries %s", r.body)
		}
		d0 = ds[0].(map[string]any)
		if d0["status"] == "pending" && d0["last_status_code"] == nil {
			return fmt.Errorf("still pending: %v", d0)
		}
		return nil
	})
	if lastErr, listed := d0["last_error"]; d0["status"] != "delivered" || d0["attempts"] != 1.0 || d0["last_status_code"] != 200.0 ||
		d0["event_id"] == "" || !listed || lastErr != nil {
		t.Fatalf("delivery %v", d0)
	}
	r = g.do(t, "GET", "/v1/webhook-endpoints/"+id+"/deliveries?cursor="+dl["nextCursor"].(string), keyA, "")
	if n := len(r.json(t)["items"].([]any)); n != 1 {
		t.Fatalf("deliveries page 2: %d", n)
	}

	// Test ping, then replay from the first event's cursor: the same webhook-ids again.
	want(t, g.do(t, "POST", "/v1/webhook-endpoints/"+id+"/test", keyA, ""), 202, "")
	got = rc.waitN(t, 4)
	if !strings.Contains(string(got[3].body), `"type":"ping"`) {
		t.Fatalf("ping body %s", got[3].body)
	}
	r = g.do(t, "POST", "/v1/webhook-endpoints/"+id+"/replay", keyA, `{"from_cursor":"`+first["cursor"].(string)+`"}`)
	want(t, r, 202, `{"nextCursor":null,"scheduled":2}`)
	got = rc.waitN(t, 6)
	seen := map[string]int{}
	for _, q := range got[:3] {
		seen[q.h.Get("webhook-id")]++
	}
	for _, q := range got[4:6] {
		if seen[q.h.Get("webhook-id")] != 1 {
			t.Fatalf("replayed webhook-id %s is not one of the originals", q.h.Get("webhook-id"))
		}
		if err := wh.Verify(q.body, q.h); err != nil {
			t.Fatal(err)
		}
	}
	want(t, g.do(t, "POST", "/v1/webhook-endpoints/"+id+"/replay", keyA, `{"from_cursor":"garbage"}`), 400, "")

	// Rotation: the new secret is shown once; both verify during the overlap.
	r = g.do(t, "POST", "/v1/webhook-endpoints/"+id+"/rotate-secret", keyA, "")
	want(t, r, 200, "")
	newSecret := r.json(t)["secret"].(string)
	db.Insert(t, "members", 1)
	got = rc.waitN(t, 7)
	nwh, _ := standardwebhooks.NewWebhook(newSecret)
	if wh.Verify(got[6].body, got[6].h) != nil || nwh.Verify(got[6].body, got[6].h) != nil {
		t.Fatal("after rotation both secrets must verify")
	}

	// Delete.
	want(t, g.do(t, "DELETE", "/v1/webhook-endpoints/"+id, keyA, ""), 204, "")
	want(t, g.do(t, "GET", "/v1/webhook-endpoints/"+id, keyA, ""), 404, notFound)
	want(t, g.do(t, "PUT", "/v1/webhook-endpoints/"+id, keyA, "{}"), 405, "")
	want(t, g.do(t, "GET", "/v1/webhook-endpoints/"+id+"/nope", keyA, ""), 404, notFound)

	// Metrics through Caddy's registry on the admin endpoint.
	resp, err := http.Get(fmt.Sprintf("http://localhost:%d/metrics", adminPort))
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{`civicgate_webhooks_deliveries_total{outcome="delivered"}`, `civicgate_webhooks_attempts_total{result="2xx"}`,
		"civicgate_webhooks_lag_events", "civicgate_webhooks_oldest_pending_seconds", "civicgate_webhooks_attempt_duration_seconds_bucket"} {
		if !strings.Contains(string(mb), m) {
			t.Fatalf("metric %s missing", m)
		}
	}

	// Nothing secret reached the log.
	logs, err := os.ReadFile(g.logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{secret, newSecret, keyA, keyB, "whsec_", "SELECT", "panic"} {
		if strings.Contains(string(logs), s) {
			t.Fatalf("log contains %.12q…", s)
		}
	}
}

// TestLoopbackRefusedWithoutDevOption: the shipped default refuses loopback
// targets at registration.
func TestLoopbackRefusedWithoutDevOption(t *testing.T) {
	db := feedtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := keystore.Migrate(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	iss, err := keystore.Issue(ctx, db.Pool, "acme", "paid", "live")
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, db.DSN, "")
	for _, u := range []string{"http://127.0.0.1:9/x", "https://127.0.0.1/x", "https://localhost/x", "https://[::1]/x"} {
		r := g.do(t, "POST", "/v1/webhook-endpoints", iss.Key, `{"url":"`+u+`"}`)
		if r.status != 400 || !strings.Contains(r.body, "loopback") && !strings.Contains(r.body, "https required") {
			t.Fatalf("%s: %d %s", u, r.status, r.body)
		}
	}
	// At most max_endpoints (3 here) per organization.
	for range 3 {
		want(t, g.do(t, "POST", "/v1/webhook-endpoints", iss.Key, `{"url":"https://example.org/hook"}`), 201, "")
	}
	r := g.do(t, "POST", "/v1/webhook-endpoints", iss.Key, `{"url":"https://example.org/hook"}`)
	if r.status != 400 || !strings.Contains(r.body, "at most 3 webhook endpoints") {
		t.Fatalf("fourth endpoint: %d %s", r.status, r.body)
	}
}
