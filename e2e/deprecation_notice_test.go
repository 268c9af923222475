package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// noticeReason is the reason the notice test's schema gives Bill.officialTitle.
const noticeReason = "Use <b>name</b>"

// schemaDeprecatingTitle writes a copy of the records schema in which
// Bill.officialTitle is deprecated with noticeReason and returns its path.
func schemaDeprecatingTitle(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "backend", "schema", "records.graphqls"))
	if err != nil {
		t.Fatal(err)
	}
	const field = "\"Official title as introduced.\"\n  officialTitle: String!\n"
	if strings.Count(string(b), field) != 1 {
		t.Fatalf("records.graphqls holds Bill.officialTitle not exactly once as\n%s", field)
	}
	reason, _ := json.Marshal(noticeReason)
	s := strings.Replace(string(b), field, strings.TrimSuffix(field, "\n")+" @deprecated(reason: "+string(reason)+")\n", 1)
	path := filepath.Join(t.TempDir(), "records.graphqls")
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// caddyfilesNoticing copies the shipped Caddyfiles with civic_webhooks
// looking for deprecation notices every second, and returns the copy of
// Caddyfile.local.
func caddyfilesNoticing(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
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
	return filepath.Join(dir, "Caddyfile.local")
}

// hookSink is a receiver recording every webhook request.
type hookSink struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []hookRequest
}

type hookRequest struct {
	h    http.Header
	body []byte
	env  struct {
		ID   string          `json:"id"`
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
}

func newHookSink(t *testing.T) *hookSink {
	k := &hookSink{}
	k.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var g hookRequest
		g.h = r.Header.Clone()
		g.body, _ = io.ReadAll(r.Body)
		_ = json.Unmarshal(g.body, &g.env)
		k.mu.Lock()
		k.got = append(k.got, g)
		k.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(k.srv.Close)
	return k
}

// ofType returns the requests received so far whose envelope type has prefix.
func (k *hookSink) ofType(prefix string) []hookRequest {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []hookRequest
	for _, g := range k.got {
		if strings.HasPrefix(g.env.Type, prefix) {
			out = append(out, g)
		}
	}
	return out
}

// TestDeprecationNoticeOnce (docs/design.md D79): through the real gateway,
// an organization whose key reads a deprecated field (twice, over two
// flushes) receives exactly one schema.deprecation_used notice, signed
// (verified with the Standard Webhooks library), naming the reason and the
// operation, on an endpoint registered for another family; an organization
// whose key reads only other fields receives none. A third organization's
// later notice shows the sidecar looked again after the second flush, and
// the change events delivered after it show nothing more was on its way.
func TestDeprecationNoticeOnce(t *testing.T) {
	s := stack.New(t, &bins)
	s.Setenv("CIVICGATE_WEBHOOKS_DEV_LOOPBACK", "on")
	s.Setenv("CIVICGATE_WEBHOOKS_POLL", "50ms")
	s.Setenv("CIVIC_WEBHOOK_SECRET_KEY", testenv.RandomSuffix(32))
	s.Setenv("CIVICGATE_SCHEMA", schemaDeprecatingTitle(t, s.Root))
	s.Setenv("CIVICGATE_USAGE_FLUSH", "1s")
	s.Prepare()
	userKey, _ := s.IssueKey("titleco", "enterprise", "live")
	quietKey, _ := s.IssueKey("quietco", "enterprise", "live")
	lateKey, _ := s.IssueKey("lateco", "enterprise", "live")
	s.StartRecordsd()
	s.StartGateway(caddyfilesNoticing(t, s.Root))

	register := func(key string, sink *hookSink) string {
		t.Helper()
		resp, body := do(t, s, http.MethodPost, "/v1/webhook-endpoints", key, "application/json",
			strings.NewReader(`{"url":"`+sink.srv.URL+`/hook","families":["members"]}`))
		var ep struct{ Secret string }
		if err := json.Unmarshal([]byte(body), &ep); resp.StatusCode != http.StatusCreated || err != nil {
			t.Fatalf("register: %d %s", resp.StatusCode, body)
		}
		return ep.Secret
	}
	user, quiet, late := newHookSink(t), newHookSink(t), newHookSink(t)
	userSecret := register(userKey, user)
	register(quietKey, quiet)
	register(lateKey, late)

	query := func(key, doc string, deprecated bool) {
		t.Helper()
		resp, body := do(t, s, http.MethodPost, "/v1/graphql", key, "application/json", strings.NewReader(doc))
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"items"`) || (resp.Header.Get("Deprecation") != "") != deprecated {
			t.Fatalf("%s: %d %s (Deprecation %q)", doc, resp.StatusCode, body, resp.Header.Get("Deprecation"))
		}
	}
	counted := func(org string, want int) {
		t.Helper()
		stack.WaitFor(t, 30*time.Second, org+"'s requests counted", func() error {
			out, err := s.RunErr(s.Bins.Civicgate, "usage", "operations", "--org", org, "--since", "1h", "--json")
			if err != nil {
				return fmt.Errorf("usage operations: %v %s", err, out)
			}
			var a struct{ Operations []struct{ Requests int } }
			if err := json.Unmarshal([]byte(out), &a); err != nil {
				return err
			}
			n := 0
			for _, o := range a.Operations {
				n += o.Requests
			}
			if n != want {
				return fmt.Errorf("%d requests counted, want %d", n, want)
			}
			return nil
		})
	}
	const titles = `{"query":"query Titles { bills(input:{limit:1}) { items { id officialTitle } } }"}`
	const ids = `{"query":"query Ids { bills(input:{limit:1}) { items { id congress } } }"}`
	query(quietKey, ids, false)
	query(userKey, titles, true)
	counted("titleco", 1)
	counted("quietco", 1)
	query(userKey, titles, true)
	counted("titleco", 2)

	var notice []hookRequest
	stack.WaitFor(t, 60*time.Second, "titleco's notice", func() error {
		if notice = user.ofType("schema."); len(notice) == 0 {
			return fmt.Errorf("no notice yet")
		}
		return nil
	})
	wh, err := standardwebhooks.NewWebhook(userSecret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(notice[0].body, notice[0].h); err != nil {
		t.Fatalf("Standard Webhooks verification of the notice: %v", err)
	}
	var data struct {
		Coordinate string `json:"coordinate"`
		Reason     string `json:"reason"`
		FirstSeen  string `json:"first_seen"`
		Requests   int64  `json:"requests"`
		Operations []struct {
			Hash     string `json:"hash"`
			Name     string `json:"name"`
			Requests int64  `json:"requests"`
		} `json:"operations"`
		More *int `json:"more_operations"`
	}
	if err := json.Unmarshal(notice[0].env.Data, &data); err != nil {
		t.Fatal(err)
	}
	if notice[0].env.Type != "schema.deprecation_used" || notice[0].env.ID != notice[0].h.Get("webhook-id") ||
		data.Coordinate != "Bill.officialTitle" || data.Reason != noticeReason || data.Requests < 1 || data.FirstSeen == "" ||
		len(data.Operations) != 1 || data.Operations[0].Name != "Titles" || len(data.Operations[0].Hash) != 64 || data.More == nil || *data.More != 0 {
		t.Fatalf("notice %s", notice[0].body)
	}

	// A round after the second flush: lateco's own notice.
	query(lateKey, titles, true)
	counted("lateco", 1)
	stack.WaitFor(t, 60*time.Second, "lateco's notice", func() error {
		if len(late.ofType("schema.")) == 0 {
			return fmt.Errorf("no notice yet")
		}
		return nil
	})
	// Change events due after anything already scheduled: once they are in,
	// nothing else was on its way.
	file := filepath.Join(t.TempDir(), "legislators.yaml")
	if err := os.WriteFile(file, []byte(legislatorsYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Run(bins.Recordsd, "sync", "members", "--file", file)
	stack.WaitFor(t, 60*time.Second, "the member events at both receivers", func() error {
		if u, q := len(user.ofType("members.")), len(quiet.ofType("members.")); u < 2 || q < 2 {
			return fmt.Errorf("titleco %d, quietco %d member events of 2", u, q)
		}
		return nil
	})
	if n := len(user.ofType("schema.")); n != 1 {
		t.Errorf("titleco received %d notices, want exactly one", n)
	}
	if n := quiet.ofType("schema."); len(n) != 0 {
		t.Errorf("quietco, which never read the deprecated field, received %s", n[0].body)
	}
	if n := len(late.ofType("schema.")); n != 1 {
		t.Errorf("lateco received %d notices, want one", n)
	}
	s.CheckLogs(t, userKey, quietKey, lateKey)
}
