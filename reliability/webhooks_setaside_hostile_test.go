package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// TestWebhookRowsHostile: rows an attacker with database access (or a second
// checkout, or a botched restore) damaged, against the real binaries. An
// endpoint with a truncated sealed secret and one whose URL stopped being
// allowed are set aside on their own — their deliveries failed with the
// documented reasons, the endpoints unusable in the API, the metric counted —
// while a healthy endpoint of the same organization receives every event.
// Then the key canary is tampered with: the gateway refuses to start with the
// message that names the variable, never the key.
func TestWebhookRowsHostile(t *testing.T) {
	e := start(t, 1, func(_ *testing.T, s *stack.Stack) { s.Setenv("CIVICGATE_WEBHOOKS_DEV_LOOPBACK", "on") })
	healthy, _ := subscribe(t, e, e.keys[0])
	_, _ = subscribe(t, e, e.keys[0])
	_, _ = subscribe(t, e, e.keys[0])
	var ids []string
	withDB(t, e.s.DSN, func(ctx context.Context, conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, `SELECT id FROM civicgate.webhook_endpoints ORDER BY created_at, id`)
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if len(ids) != 3 {
		t.Fatalf("endpoints %v", ids)
	}
	truncated, badURL := ids[1], ids[2]
	withDB(t, e.s.DSN, func(ctx context.Context, conn *pgx.Conn) error {
		if _, err := conn.Exec(ctx, `UPDATE civicgate.webhook_endpoints SET secret_sealed = substring(secret_sealed FROM 1 FOR 20) WHERE id = $1`, truncated); err != nil {
			return err
		}
		_, err := conn.Exec(ctx, `UPDATE civicgate.webhook_endpoints SET url = 'https://10.0.0.1/hook' WHERE id = $1`, badURL)
		return err
	})
	// The rows were damaged before this gateway process checked its key.
	e.gw.Stop()
	e.gw = e.s.StartGateway("caddyfile/Caddyfile.local")

	const members = 5
	from := maxEventSeq(t, e.s.DSN)
	e.s.Run(bins.Recordsd, "sync", "members", "--file", legislators(t, members, 1))
	want := memberEvents(t, e.s.DSN, from)
	healthy.mu.Lock()
	healthy.refusing = false
	healthy.mu.Unlock()
	healthy.waitAll(t, e.s.DSN, want)

	reasons := map[string]string{truncated: "endpoint secret cannot be opened with the sealing key", badURL: "endpoint url no longer allowed"}
	stack.WaitFor(t, 30*time.Second, "damaged endpoints' deliveries failed", func() error {
		var bad string
		withDB(t, e.s.DSN, func(ctx context.Context, conn *pgx.Conn) error {
			for id, reason := range reasons {
				var n int
				if err := conn.QueryRow(ctx, `SELECT count(*) FROM civicgate.webhook_deliveries WHERE endpoint_id = $1
					AND NOT (status = 'failed' AND last_error = $2 AND attempts = 0)`, id, reason).Scan(&n); err != nil {
					return err
				}
				if n > 0 {
					bad = fmt.Sprintf("%s: %d deliveries not failed with %q", id, n, reason)
				}
			}
			return nil
		})
		if bad != "" {
			return fmt.Errorf("%s", bad)
		}
		return nil
	})

	list := call{name: "list endpoints", method: "GET", path: "/v1/webhook-endpoints", key: e.keys[0]}
	r := send(t.Context(), e.s.Client, e.s.HTTPSURL, &list)
	var got struct {
		Items []json.RawMessage `json:"items"`
	}
	if r.status != 200 || json.Unmarshal([]byte(r.body), &got) != nil || len(got.Items) != 3 {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	if !strings.Contains(r.body, `"status":"unusable","unusable_reason":"endpoint secret cannot be opened with the sealing key"`) ||
		!strings.Contains(r.body, `"status":"unusable","unusable_reason":"endpoint url no longer allowed"`) ||
		strings.Count(r.body, `"status":"active"`) != 1 {
		t.Fatalf("endpoints as listed: %s", r.body)
	}
	for _, kind := range []string{"secret", "url"} {
		name := `civicgate_webhooks_endpoints_set_aside_total{kind="` + kind + `"}`
		if v, err := e.s.GatewayMetric(t.Context(), name); err != nil || v != 1 {
			t.Errorf("%s = %v, %v", name, v, err)
		}
	}

	// A tampered canary: no key opens it, the gateway refuses to start.
	e.gw.Stop()
	withDB(t, e.s.DSN, func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, `UPDATE civicgate.webhook_key_canary SET sealed = set_byte(sealed, 20, get_byte(sealed, 20) # 1)`)
		return err
	})
	p := e.s.SpawnProc("civicgate", bins.Civicgate, "run", "--config", "caddyfile/Caddyfile.local", "--adapter", "caddyfile")
	stack.WaitFor(t, 60*time.Second, "the gateway refuses to start", func() error {
		if !p.Exited() {
			return fmt.Errorf("still running")
		}
		return nil
	})
	out, err := os.ReadFile(p.Log)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"refusing to start", "CIVIC_WEBHOOK_SECRET_KEY (the civic_webhooks secret_key option)", "civicgate webhooks rekey"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("refusal lacks %q: %.2000s", want, out)
		}
	}
	secrets := []string{e.s.Getenv("CIVIC_WEBHOOK_SECRET_KEY"), e.s.Getenv("CIVIC_IDENTITY_SECRET")}
	for _, s := range secrets {
		if s != "" && strings.Contains(string(out), s) {
			t.Fatal("key material in the refusal")
		}
	}
	e.s.CheckLogs(t, append(secrets, e.keys[0])...)
}
