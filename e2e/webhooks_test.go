package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// legislatorsYAML is a two-member legislators-current.yaml for a real
// `recordsd sync members` run (the backend's own change_events writer).
const legislatorsYAML = `- id:
    bioguide: Z999001
  name:
    first: Ada
    last: Example
    official_full: Ada Example
  bio:
    birthday: '1970-01-01'
  terms:
  - type: rep
    start: '2025-01-03'
    end: '2027-01-03'
    state: WA
    district: 1
    party: Democrat
- id:
    bioguide: Z999002
  name:
    first: Bo
    last: Sample
    official_full: Bo Sample
  bio:
    birthday: '1971-02-02'
  terms:
  - type: sen
    start: '2025-01-03'
    end: '2031-01-03'
    state: OR
    class: 2
    party: Republican
`

// TestWebhooksRoundTrip: through the real gateway (Caddyfile.local over TLS)
// a client registers a loopback receiver, the backend's sync writes change
// events, the in-gateway sidecar delivers them signed (verified with the
// Standard Webhooks library), the feed and the deliveries list show them, a
// replay resends the same webhook-ids, and another organization sees nothing.
//
// It runs twice: with the sidecar inside the gateway (the default), and with
// the gateway's delivery off and a separate civicgate process running
// caddyfile/Caddyfile.webhooks.
func TestWebhooksRoundTrip(t *testing.T) {
	t.Run("sidecar in the gateway", func(t *testing.T) { webhooksRoundTrip(t, false) })
	t.Run("separate sidecar process", func(t *testing.T) { webhooksRoundTrip(t, true) })
}

func webhooksRoundTrip(t *testing.T, separate bool) {
	s := stack.New(t, &bins)
	s.Setenv("CIVICGATE_WEBHOOKS_DEV_LOOPBACK", "on")
	s.Setenv("CIVICGATE_WEBHOOKS_POLL", "50ms")
	s.Setenv("CIVIC_WEBHOOK_SECRET_KEY", testenv.RandomSuffix(32))
	s.Prepare()
	s.Run(bins.Civicgate, "webhooks", "migrate")
	s.Run(bins.Civicgate, "webhooks", "migrate") // idempotent
	key, _ := s.IssueKey("hookco", "enterprise", "live")
	other, _ := s.IssueKey("nosyco", "enterprise", "live")
	if separate {
		s.Setenv("CIVICGATE_WEBHOOKS_DELIVER", "off")
	}
	s.StartGateway("caddyfile/Caddyfile.local")
	if separate {
		health := testenv.FreePort(t)
		s.Setenv("CIVICGATE_SIDECAR_ADMIN", "localhost:"+strconv.Itoa(testenv.FreePort(t)))
		s.Setenv("CIVICGATE_SIDECAR_HEALTH_PORT", strconv.Itoa(health))
		s.Spawn("sidecar", bins.Civicgate, "run", "--config", "caddyfile/Caddyfile.webhooks", "--adapter", "caddyfile")
		stack.WaitFor(t, 30*time.Second, "sidecar /healthz", func() error {
			resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(health) + "/healthz")
			if err != nil {
				return err
			}
			resp.Body.Close()
			return nil
		})
	}

	var mu sync.Mutex
	type got struct {
		h    http.Header
		body []byte
	}
	var received []got
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		received = append(received, got{r.Header.Clone(), b})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	waitReceived := func(n int) []got {
		t.Helper()
		var out []got
		stack.WaitFor(t, 60*time.Second, "webhook deliveries", func() error {
			mu.Lock()
			defer mu.Unlock()
			out = append([]got(nil), received...)
			if len(out) < n {
				return fmt.Errorf("received %d of %d", len(out), n)
			}
			return nil
		})
		return out
	}

	call := func(method, path, key, body string) (int, map[string]any, http.Header) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, s.HTTPSURL+path, rd)
		req.Header.Set("Authorization", "Bearer "+key)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := s.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		raw, _ := io.ReadAll(resp.Body)
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatalf("%s %s: %d %q", method, path, resp.StatusCode, raw)
			}
		}
		return resp.StatusCode, m, resp.Header
	}

	code, ep, hdr := call("POST", "/v1/webhook-endpoints", key, `{"url":"`+rcv.URL+`/hook","families":["members"]}`)
	if code != 201 || !strings.HasPrefix(ep["secret"].(string), "whsec_") {
		t.Fatalf("create: %d %v", code, ep)
	}
	if hdr.Get("RateLimit-Policy") == "" || hdr.Get("X-Request-Id") == "" {
		t.Fatalf("the webhook routes must be rate limited and carry X-Request-Id: %v", hdr)
	}
	id, secret := ep["id"].(string), ep["secret"].(string)

	file := filepath.Join(t.TempDir(), "legislators.yaml")
	if err := os.WriteFile(file, []byte(legislatorsYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Run(bins.Recordsd, "sync", "members", "--file", file)

	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	first := waitReceived(2)
	ids := map[string]bool{}
	for _, g := range first {
		if err := wh.Verify(g.body, g.h); err != nil {
			t.Fatalf("Standard Webhooks verification: %v", err)
		}
		var env map[string]any
		_ = json.Unmarshal(g.body, &env)
		if !strings.HasPrefix(env["type"].(string), "members.") || env["data"].(map[string]any)["family"] != "members" {
			t.Fatalf("envelope %v", env)
		}
		ids[g.h.Get("webhook-id")] = true
	}
	if len(ids) != 2 {
		t.Fatalf("%d distinct webhook-ids", len(ids))
	}

	// The polling alternative shows the same events.
	code, feed, _ := call("GET", "/v1/changes?families=members&limit=100", key, "")
	if code != 200 {
		t.Fatalf("changes: %d %v", code, feed)
	}
	var cursorBefore string
	n := 0
	for _, it := range feed["items"].([]any) {
		e := it.(map[string]any)
		if ids[e["id"].(string)] {
			n++
		} else {
			cursorBefore = e["cursor"].(string)
		}
	}
	if n != 2 {
		t.Fatalf("the feed holds %d of the delivered events", n)
	}

	// Deliveries list, replay (same ids), isolation.
	code, dl, _ := call("GET", "/v1/webhook-endpoints/"+id+"/deliveries", key, "")
	if code != 200 || len(dl["items"].([]any)) != 2 || dl["items"].([]any)[0].(map[string]any)["status"] != "delivered" {
		t.Fatalf("deliveries: %d %v", code, dl)
	}
	body := `{}`
	if cursorBefore != "" {
		body = `{"from_cursor":"` + cursorBefore + `"}`
	}
	if code, m, _ := call("POST", "/v1/webhook-endpoints/"+id+"/replay", key, body); code != 202 || m["scheduled"] != 2.0 {
		t.Fatalf("replay: %d %v", code, m)
	}
	for _, g := range waitReceived(4)[2:] {
		if !ids[g.h.Get("webhook-id")] || wh.Verify(g.body, g.h) != nil {
			t.Fatalf("replayed delivery %v", g.h)
		}
	}
	if code, m, _ := call("GET", "/v1/webhook-endpoints/"+id, other, ""); code != 404 || m["error"] != "Not Found" {
		t.Fatalf("another organization: %d %v", code, m)
	}
	if code, m, _ := call("POST", "/v1/webhook-endpoints/"+id+"/replay", other, `{}`); code != 404 {
		t.Fatalf("another organization's replay: %d %v", code, m)
	}

	// Who delivered: the gateway's sidecar, or only the separate process.
	metrics := func(admin string) string {
		resp, err := http.Get("http://" + admin + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	const delivered = `civicgate_webhooks_deliveries_total{outcome="delivered"}`
	gw := strings.Contains(metrics(s.Getenv("CIVICGATE_ADMIN")), delivered)
	if gw == separate {
		t.Fatalf("gateway delivered: %v, separate sidecar configured: %v", gw, separate)
	}
	if separate && !strings.Contains(metrics(s.Getenv("CIVICGATE_SIDECAR_ADMIN")), delivered) {
		t.Fatal("the separate sidecar reports no deliveries")
	}

	// Nothing secret in any process log.
	s.CheckLogs(t, secret, key, other, "whsec_")
}
