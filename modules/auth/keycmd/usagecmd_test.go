package keycmd

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

type usageDoc struct {
	Org   string `json:"org"`
	Since string `json:"since"`
	By    string `json:"by"`
	Rows  []struct {
		Start string `json:"start"`
		KeyID string `json:"key_id"`
		usageCounts
	} `json:"rows"`
	Totals usageCounts `json:"totals"`
}

type usageCounts struct {
	Admitted     int64 `json:"admitted"`
	Refused      int64 `json:"refused"`
	ClientErrors int64 `json:"client_errors"`
	ServerErrors int64 `json:"server_errors"`
	Cost         int64 `json:"cost"`
}

// seedUsage issues keys through the CLI and writes usage for them the way a
// gateway's flush does. It returns acme's key ids.
func seedUsage(t *testing.T, c cli) (k1, k2 string) {
	t.Helper()
	c.must("migrate")
	k1, _ = issuedKey(t, c.must("issue", "--org", "acme", "--tier", "free", "--env", "live"))
	k2, _ = issuedKey(t, c.must("issue", "--org", "acme", "--tier", "free", "--env", "test"))
	ko, _ := issuedKey(t, c.must("issue", "--org", "other", "--tier", "free", "--env", "live"))
	pool := newPool(t, c.dsn)
	orgOf := func(key string) string {
		var org string
		if err := pool.QueryRow(context.Background(), `SELECT org_id FROM civicgate.api_keys WHERE id = $1`, key).Scan(&org); err != nil {
			t.Fatal(err)
		}
		return org
	}
	now := time.Now()
	m := usage.NewMeter(0)
	m.Add(k1, orgOf(k1), now.Add(-10*time.Minute), usage.Delta{Admitted: 3, Cost: 9, MCP: 2})
	m.Add(k2, orgOf(k2), now.Add(-10*time.Minute), usage.Delta{Refused: 2, ClientErrors: 1})
	m.Add(k1, orgOf(k1), now.Add(-3*time.Hour), usage.Delta{Admitted: 5, ServerErrors: 1})
	m.Add(ko, orgOf(ko), now.Add(-10*time.Minute), usage.Delta{Admitted: 1000})
	if err := usage.Write(context.Background(), pool, m.Drain()); err != nil {
		t.Fatal(err)
	}
	return k1, k2
}

func TestKeysCLIUsageTable(t *testing.T) {
	c := cli{t, testenv.Postgres(t)}
	k1, k2 := seedUsage(t, c)
	out := c.must("usage", "--org", "acme")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 {
		t.Fatalf("want a header, 3 hour rows and a total:\n%s", out)
	}
	if f := strings.Fields(lines[0]); strings.Join(f, " ") != "START KEY ADMITTED REFUSED 4XX 5XX COST MCP" {
		t.Fatalf("header %q", lines[0])
	}
	if f := strings.Fields(lines[4]); strings.Join(f, " ") != "TOTAL 8 2 1 1 9 2" {
		t.Fatalf("total line %q, want TOTAL 8 2 1 1 9 2", lines[4])
	}
	hourStart := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:00:00Z$`)
	want := map[string]int{k1 + " 5 0 0 1 0 0": 1, k1 + " 3 0 0 0 9 2": 1, k2 + " 0 2 1 0 0 0": 1}
	for _, l := range lines[1:4] {
		f := strings.Fields(l)
		if !hourStart.MatchString(f[0]) {
			t.Fatalf("row %q: start is not a whole UTC hour", l)
		}
		want[strings.Join(f[1:], " ")]--
	}
	for row, n := range want {
		if n != 0 {
			t.Fatalf("row %q missing or repeated in\n%s", row, out)
		}
	}
	// The first row is the oldest.
	if !strings.Contains(lines[1], k1) || !strings.HasSuffix(strings.Join(strings.Fields(lines[1]), " "), "5 0 0 1 0 0") {
		t.Fatalf("rows not ordered by start:\n%s", out)
	}
}

func TestKeysCLIUsageJSON(t *testing.T) {
	c := cli{t, testenv.Postgres(t)}
	k1, _ := seedUsage(t, c)
	var doc usageDoc
	if err := json.Unmarshal([]byte(c.must("usage", "--org", "acme", "--json")), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Org != "acme" || doc.Since != "24h0m0s" || doc.By != "hour" || len(doc.Rows) != 3 ||
		doc.Totals != (usageCounts{Admitted: 8, Refused: 2, ClientErrors: 1, ServerErrors: 1, Cost: 9}) {
		t.Fatalf("usage --json: %+v", doc)
	}
	for _, r := range doc.Rows {
		if _, err := time.Parse(time.RFC3339, r.Start); err != nil {
			t.Fatalf("start %q: %v", r.Start, err)
		}
	}

	// By organization id, one key, the last hour: minutes.
	var orgID string
	if err := newPool(t, c.dsn).QueryRow(context.Background(), `SELECT id FROM civicgate.organizations WHERE name = 'acme'`).Scan(&orgID); err != nil {
		t.Fatal(err)
	}
	doc = usageDoc{}
	if err := json.Unmarshal([]byte(c.must("usage", "--org", orgID, "--key", k1, "--since", "1h", "--json")), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.By != "minute" || doc.Since != "1h0m0s" || len(doc.Rows) != 1 || doc.Rows[0].KeyID != k1 ||
		doc.Rows[0].usageCounts != (usageCounts{Admitted: 3, Cost: 9}) || doc.Totals != doc.Rows[0].usageCounts {
		t.Fatalf("usage --key --since 1h: %+v", doc)
	}
	// Days, and an organization with nothing counted: rows is [], not null.
	if out := c.must("usage", "--org", "acme", "--since", "7d", "--json"); !strings.Contains(out, `"since": "168h0m0s"`) {
		t.Fatalf("--since 7d: %s", out)
	}
	c.must("issue", "--org", "quiet", "--tier", "free", "--env", "live")
	if out := c.must("usage", "--org", "quiet", "--json"); !strings.Contains(out, `"rows": []`) {
		t.Fatalf("no usage: %s", out)
	}
}

func TestKeysCLIUsageExitCodes(t *testing.T) {
	c := cli{t, testenv.Postgres(t)}
	seedUsage(t, c)
	code, out, errs := c.run("usage", "--org", "nobody")
	if code != 1 || out != "" || !strings.Contains(errs, `no organization "nobody"`) {
		t.Fatalf("unknown organization: exit %d, out %q, err %q", code, out, errs)
	}
	for _, args := range [][]string{
		{"usage"},
		{"usage", "--org", "acme", "--since", "yesterday"},
		{"usage", "--org", "acme", "--since", "-1h"},
		{"usage", "--org", "acme", "--since", "0d"},
		{"usage", "--org", "acme", "--since", "72h", "--by", "minute"},
		{"usage", "--org", "acme", "--by", "day"},
		{"usage", "--org", "acme", "extra"},
		{"usage", "--org", "acme", "--tier", "free"},
	} {
		if code, out, errs := c.run(args...); code != 2 || out != "" || errs == "" {
			t.Errorf("keys %v: exit %d, out %q, err %q; want 2", args, code, out, errs)
		}
	}
	none := cli{t: t}
	if code, _, errs := none.run("usage", "--org", "acme"); code != 1 || !strings.Contains(errs, "DATABASE_URL") {
		t.Fatalf("without DATABASE_URL: exit %d %q", code, errs)
	}
	// Before migrate the tables are missing: exit 1 and what to do.
	fresh := cli{t, testenv.Postgres(t)}
	if code, _, errs := fresh.run("usage", "--org", "acme"); code != 1 || !strings.Contains(errs, "keys migrate") {
		t.Fatalf("before migrate: exit %d %q", code, errs)
	}
}
