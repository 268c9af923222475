package usageexport

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
	"github.com/civicgate/civicgate/modules/usageexport/export"
)

// adminPort is this package's caddytest admin port (each package its own).
const adminPort = 2979

// TestAppExportsClosedHoursFromTheCaddyfile: a gateway configured with the
// civic_usage_export block creates its tables and POSTs the closed hours of
// the usage table to the sink, with the configured source and auth header,
// and not the hour still open.
func TestAppExportsClosedHoursFromTheCaddyfile(t *testing.T) {
	dsn := testenv.Postgres(t)
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := usage.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	open := time.Now().UTC().Truncate(time.Hour)
	closed := open.Add(-3 * time.Hour)
	if err := usage.Write(context.Background(), pool, []usage.Row{
		{KeyID: "key_a", OrgID: "org_1", Start: closed, Delta: usage.Delta{Admitted: 4, Cost: 8}},
		{KeyID: "key_b", OrgID: "org_2", Start: closed, Delta: usage.Delta{Refused: 1}},
		// the next hour: open for the whole test, even across an hour's end
		{KeyID: "key_a", OrgID: "org_1", Start: open.Add(time.Hour), Delta: usage.Delta{Admitted: 1}},
	}); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var got []event.Event
	var auth string
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		evs, err := cehttp.NewEventsFromHTTPRequest(r)
		if err != nil {
			http.Error(w, "bad batch", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got, auth = append(got, evs...), r.Header.Get("Authorization")
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer sink.Close()
	t.Setenv("CIVICGATE_TEST_EXPORT_DSN", dsn)
	t.Setenv("CIVICGATE_TEST_EXPORT_TOKEN", "om_secret")

	cfg := fmt.Sprintf(`{
	admin localhost:%d
	http_port %d
	civic_usage_export {
		database {env.CIVICGATE_TEST_EXPORT_DSN}
		sink %s/api/v1/events
		auth_header Authorization "Bearer {env.CIVICGATE_TEST_EXPORT_TOKEN}"
		source //gateway.test
		interval 1s
		settle 10s
	}
}
:%d {
	respond ok
}
`, adminPort, testenv.FreePort(t), sink.URL, testenv.FreePort(t))
	caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort}).InitServer(cfg, "caddyfile")

	testenv.Eventually(t, 20*time.Second, "the two closed hours at the sink", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(got) < 2 {
			return fmt.Errorf("%d events", len(got))
		}
		return nil
	})
	// the counters on the admin endpoint's metrics
	testenv.Eventually(t, 10*time.Second, "the export's metrics", func() error {
		resp, err := http.Get(fmt.Sprintf("http://localhost:%d/metrics", adminPort))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		for _, want := range []string{"civicgate_usage_export_events_total 2", "civicgate_usage_export_lag_seconds ",
			"civicgate_usage_export_failed_attempts_total 0"} {
			if !strings.Contains(string(body), want) {
				return fmt.Errorf("no %q in the metrics", want)
			}
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || auth != "Bearer om_secret" {
		t.Fatalf("events %v, auth %q", got, auth)
	}
	want := map[string]bool{export.EventID("key_a", closed): true, export.EventID("key_b", closed): true}
	for _, e := range got {
		if !want[e.ID()] || e.Source() != "//gateway.test" || e.Type() != export.EventType {
			t.Errorf("unexpected event %s", e)
		}
	}
}
