package reliability

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// Deprecation notices against hostile schema text and volume (docs/design.md
// D79): a @deprecated reason holding markup, a forged envelope tail, control
// characters, a line separator and a bidi override reaches the receiver as
// one JSON string of the envelope's data, signed, with no raw control byte
// and no markup outside a string; a coordinate read by 1 000 operations is
// notified once, naming 20 of them and counting the rest.

// hostileReason is the reason the test schema gives Bill.officialTitle.
const hostileReason = "</script><script>alert(1)</script>\"},\"type\":\"forged\",\"data\":{\"x\":\"" +
	"\a\x1b[31mred\r\n\ttab \u2028 \u202egnp.exe <img src=x onerror=alert(2)> & ${x} {{x}}"

// hostileNoticeFiles writes the schema with Bill.officialTitle deprecated with
// hostileReason, and the shipped Caddyfiles with notices looked for every
// second; it returns the schema and the copy of Caddyfile.local.
func hostileNoticeFiles(t *testing.T, root string) (schema, caddyfile string) {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(root, "backend", "schema", "records.graphqls"))
	if err != nil {
		t.Fatal(err)
	}
	const field = "\"Official title as introduced.\"\n  officialTitle: String!\n"
	if strings.Count(string(b), field) != 1 {
		t.Fatalf("records.graphqls holds Bill.officialTitle not exactly once as\n%s", field)
	}
	reason, _ := json.Marshal(hostileReason) // JSON escapes are GraphQL string escapes
	schema = filepath.Join(dir, "records.graphqls")
	if err := os.WriteFile(schema, []byte(strings.Replace(string(b), field,
		strings.TrimSuffix(field, "\n")+" @deprecated(reason: "+string(reason)+")\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "caddyfile", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("shipped Caddyfiles: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(f) == "Caddyfile.local" {
			const old = "\t\tpoll_interval {$CIVICGATE_WEBHOOKS_POLL:1s}\n"
			if n := bytes.Count(b, []byte(old)); n != 1 {
				t.Fatalf("Caddyfile.local holds %q %d times, want once", old, n)
			}
			b = bytes.Replace(b, []byte(old), []byte(old+"\t\tnotice_interval 1s\n"), 1)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return schema, filepath.Join(dir, "Caddyfile.local")
}

// noticeSink records the notices (envelope type schema.*) it receives.
type noticeSink struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	heads  []http.Header
}

func newNoticeSink(t *testing.T) *noticeSink {
	k := &noticeSink{}
	k.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		k.mu.Lock()
		k.bodies, k.heads = append(k.bodies, b), append(k.heads, r.Header.Clone())
		k.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(k.srv.Close)
	return k
}

func (k *noticeSink) received() ([][]byte, []http.Header) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.bodies), slices.Clone(k.heads)
}

func TestDeprecationNoticeHostile(t *testing.T) {
	s := stack.New(t, &bins)
	schema, caddyfile := hostileNoticeFiles(t, s.Root)
	s.Setenv("CIVICGATE_WEBHOOKS_DEV_LOOPBACK", "on")
	s.Setenv("CIVICGATE_WEBHOOKS_POLL", "50ms")
	s.Setenv("CIVIC_WEBHOOK_SECRET_KEY", testenv.RandomSuffix(32))
	s.Setenv("CIVICGATE_SCHEMA", schema)
	s.Setenv("CIVICGATE_USAGE_FLUSH", "1s")
	s.Prepare()
	oneKey, _ := s.IssueKey("markupco", "enterprise", "live")
	// 1 000 operations: two keys, as the enterprise tier allows 1 000 requests a minute per key
	manyKeys := []string{}
	for range 2 {
		k, _ := s.IssueKey("manyco", "enterprise", "live")
		manyKeys = append(manyKeys, k)
	}
	s.StartRecordsd()
	s.StartGateway(caddyfile)

	register := func(key string, sink *noticeSink) *standardwebhooks.Webhook {
		t.Helper()
		r := send(t.Context(), s.Client, s.HTTPSURL, &call{method: http.MethodPost, path: "/v1/webhook-endpoints", key: key,
			ctype: "application/json", body: `{"url":"` + sink.srv.URL + `/hook","families":["bills"]}`})
		var ep struct{ Secret string }
		if err := json.Unmarshal([]byte(r.body), &ep); r.status != http.StatusCreated || err != nil {
			t.Fatalf("register: %d %.300s", r.status, r.body)
		}
		wh, err := standardwebhooks.NewWebhook(ep.Secret)
		if err != nil {
			t.Fatal(err)
		}
		return wh
	}
	one, many := newNoticeSink(t), newNoticeSink(t)
	oneVerifier := register(oneKey, one)

	query := func(key, name string) {
		r := send(t.Context(), s.Client, s.HTTPSURL, &call{method: http.MethodPost, path: "/v1/graphql", key: key, ctype: "application/json",
			body: `{"query":"query ` + name + ` { bills(input:{limit:1}) { items { officialTitle } } }"}`})
		if r.status != http.StatusOK {
			t.Errorf("%s: %d %v %.300s", name, r.status, r.err, r.body)
		}
	}
	query(oneKey, "Markup")
	const operations = 1000
	var wg sync.WaitGroup
	names := make(chan string)
	for w := range 8 {
		wg.Go(func() {
			for n := range names {
				query(manyKeys[w%2], n)
			}
		})
	}
	for i := range operations {
		names <- fmt.Sprintf("Op%04d", i)
	}
	close(names)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// manyco registers its endpoint once all 1 000 are counted: an
	// organization without an endpoint is not notified yet (D79), so its
	// notice reports them all.
	pool, err := pgxpool.New(t.Context(), s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	stack.WaitFor(t, 60*time.Second, "manyco's 1 000 operations counted", func() error {
		var ops, requests int64
		if err := pool.QueryRow(t.Context(), `SELECT count(DISTINCT h.op_hash), coalesce(sum(h.requests), 0)
			FROM civicgate.usage_operation_org_hour h JOIN civicgate.organizations o ON o.id = h.org_id WHERE o.name = 'manyco'`).
			Scan(&ops, &requests); err != nil {
			return err
		}
		if ops != operations || requests != operations {
			return fmt.Errorf("%d operations, %d requests counted", ops, requests)
		}
		return nil
	})
	manyVerifier := register(manyKeys[0], many)

	await := func(sink *noticeSink, who string) ([]byte, http.Header) {
		t.Helper()
		var bodies [][]byte
		var heads []http.Header
		stack.WaitFor(t, 90*time.Second, who+"'s notice", func() error {
			if bodies, heads = sink.received(); len(bodies) == 0 {
				return fmt.Errorf("nothing received")
			}
			return nil
		})
		return bodies[0], heads[0]
	}
	type envelope struct {
		ID     string  `json:"id"`
		Type   string  `json:"type"`
		Cursor *string `json:"cursor"`
		Data   struct {
			Coordinate string            `json:"coordinate"`
			Reason     string            `json:"reason"`
			Requests   int64             `json:"requests"`
			Operations []json.RawMessage `json:"operations"`
			More       int               `json:"more_operations"`
		} `json:"data"`
	}
	decode := func(body []byte, h http.Header, v *standardwebhooks.Webhook) envelope {
		t.Helper()
		if err := v.Verify(body, h); err != nil {
			t.Fatalf("Standard Webhooks verification: %v\n%s", err, body)
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(body, &top); err != nil {
			t.Fatalf("not JSON: %v\n%q", err, body)
		}
		keys := make([]string, 0, len(top))
		for k := range top {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"cursor", "data", "id", "occurred_at", "type"}) {
			t.Fatalf("envelope members %v: the reason broke out of its string\n%s", keys, body)
		}
		var e envelope
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatal(err)
		}
		if e.Type != "schema.deprecation_used" || e.ID != h.Get("webhook-id") || e.Cursor != nil || e.Data.Coordinate != "Bill.officialTitle" {
			t.Fatalf("envelope %s", body)
		}
		for _, c := range body {
			if c < 0x20 {
				t.Fatalf("raw control byte %#x in the body %q", c, body)
			}
		}
		if bytes.Contains(body, []byte("<script")) || bytes.Contains(body, []byte("<img")) {
			t.Fatalf("markup outside a JSON escape in %s", body)
		}
		return e
	}

	body, h := await(one, "markupco")
	if e := decode(body, h, oneVerifier); e.Data.Reason != hostileReason || e.Data.Requests != 1 || len(e.Data.Operations) != 1 || e.Data.More != 0 {
		t.Errorf("markupco's notice: reason %q, %d requests, %d operations (+%d)\n%s", e.Data.Reason, e.Data.Requests,
			len(e.Data.Operations), e.Data.More, body)
	}
	body, h = await(many, "manyco")
	if e := decode(body, h, manyVerifier); e.Data.Reason != hostileReason ||
		len(e.Data.Operations) != 20 || e.Data.More != operations-20 || e.Data.Requests != operations {
		t.Errorf("manyco's notice: %d requests, %d operations named and %d more, want 20 named and the rest counted", e.Data.Requests,
			len(e.Data.Operations), e.Data.More)
	} else if len(body) > 16<<10 {
		t.Errorf("manyco's notice is %d bytes: the list is not bounded", len(body))
	}
	// each organization once: the sidecar counts two notices, and each
	// receiver got one delivery (no change event is written here)
	stack.WaitFor(t, 30*time.Second, "two notices counted", func() error {
		n, err := s.GatewayMetric(t.Context(), `civicgate_webhooks_notices_total{type="schema.deprecation_used"}`)
		if err != nil || n != 2 {
			return fmt.Errorf("notices_total %v %v", n, err)
		}
		return nil
	})
	for who, sink := range map[string]*noticeSink{"markupco": one, "manyco": many} {
		if bodies, _ := sink.received(); len(bodies) != 1 {
			t.Errorf("%s received %d deliveries, want its one notice", who, len(bodies))
		}
	}
	s.CheckLogs(t, append(manyKeys, oneKey)...)
}
