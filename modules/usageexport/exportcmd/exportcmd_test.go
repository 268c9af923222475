package exportcmd

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
	"github.com/civicgate/civicgate/modules/usageexport/export"
)

func run(t *testing.T, dsn string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, &out, &errb, func(k string) string {
		if k == "DATABASE_URL" {
			return dsn
		}
		return ""
	})
	return code, out.String(), errb.String()
}

// TestUsageExportPrintsClosedHours: the three formats print the closed
// hours of the window (not the open one, not another organization's with
// --org), with the events' ids; refusals exit 2, an unknown organization 1.
func TestUsageExportPrintsClosedHours(t *testing.T) {
	dsn := testenv.Postgres(t)
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, m := range []func(context.Context, *pgxpool.Pool) error{keystore.Migrate, usage.Migrate} {
		if err := m(context.Background(), pool); err != nil {
			t.Fatal(err)
		}
	}
	open := time.Now().UTC().Add(-export.DefaultSettle).Truncate(time.Hour)
	h := open.Add(-2 * time.Hour)
	if err := usage.Write(context.Background(), pool, []usage.Row{
		{KeyID: "key_a", OrgID: "org_1", Start: h, Delta: usage.Delta{Admitted: 4, Cost: 8, MCP: 1}},
		{KeyID: "key_b", OrgID: "org_2", Start: h.Add(time.Hour), Delta: usage.Delta{Refused: 1, ServerErrors: 2}},
		{KeyID: "key_a", OrgID: "org_1", Start: open.Add(time.Hour), Delta: usage.Delta{Admitted: 1}}, // not closed, even across an hour's end
		{KeyID: "key_a", OrgID: "org_1", Start: h.Add(-48 * time.Hour), Delta: usage.Delta{Admitted: 1}},
	}); err != nil {
		t.Fatal(err)
	}
	// key_a ran one operation three times in its closed hour (the operation
	// meter and flush of docs/design.md D70): its event carries it.
	ops := usage.NewOperationMeter(0, 0)
	bills := &contract.GraphQLOperation{Type: "query", Name: "Bills", DocumentHash: strings.Repeat("b", 64)}
	for i := range 3 {
		ops.Add(&usage.OperationSample{KeyID: "key_a", Org: orgSource("org_1"), At: h.Add(time.Minute), Operation: bills,
			Error: i == 0, Cost: 2, Latency: time.Millisecond})
	}
	opRows, records := ops.Drain()
	if _, err := usage.WriteFlush(context.Background(), pool, usage.NewBatchID(), usage.Batch{Operations: opRows, Records: records}); err != nil {
		t.Fatal(err)
	}

	code, out, errs := run(t, dsn, "--since", "24h")
	if code != 0 {
		t.Fatalf("csv: exit %d: %s", code, errs)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || strings.Join(recs[0], ",") != strings.Join(export.CSVHeader, ",") ||
		strings.Join(recs[1], ",") != export.EventID("key_a", h)+",org_1,key_a,"+h.Format(time.RFC3339)+","+h.Add(time.Hour).Format(time.RFC3339)+",4,0,0,0,8,1" ||
		recs[2][2] != "key_b" || recs[2][7] != "0" || recs[2][8] != "2" {
		t.Fatalf("csv:\n%s", out)
	}

	code, out, errs = run(t, dsn, "--from", h.Format(time.RFC3339), "--to", open.Add(time.Hour).Format(time.RFC3339), "--org", "org_2", "--format", "json")
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, errs)
	}
	var j struct {
		Events []struct {
			ID string `json:"id"`
			export.Data
		} `json:"events"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil || len(j.Events) != 1 || j.Events[0].KeyID != "key_b" ||
		j.Events[0].ID != export.EventID("key_b", h.Add(time.Hour)) || j.Events[0].ServerErrors != 2 {
		t.Fatalf("json %v:\n%s", err, out)
	}

	code, out, errs = run(t, dsn, "--since", "7d", "--format", "cloudevents", "--source", "//gw")
	if code != 0 {
		t.Fatalf("cloudevents: exit %d: %s", code, errs)
	}
	var evs []event.Event
	if err := json.Unmarshal([]byte(out), &evs); err != nil || len(evs) != 3 {
		t.Fatalf("cloudevents %v:\n%s", err, out)
	}
	var withOps export.Data
	if err := evs[1].DataAs(&withOps); err != nil || withOps.KeyID != "key_a" || len(withOps.Operations) != 1 ||
		withOps.Operations[0] != (export.Operation{Hash: bills.DocumentHash, Type: "query", Name: "Bills", Requests: 3, Errors: 1, Cost: 6}) {
		t.Fatalf("key_a's hour %+v (%v), want its operation", withOps, err)
	}
	var withoutOps export.Data
	if err := evs[2].DataAs(&withoutOps); err != nil || withoutOps.KeyID != "key_b" || withoutOps.Operations != nil {
		t.Fatalf("key_b's hour %+v (%v), want no operations", withoutOps, err)
	}
	for _, e := range evs {
		if err := e.Validate(); err != nil || e.Source() != "//gw" {
			t.Errorf("%s: %v", e, err)
		}
	}

	for name, args := range map[string][]string{
		"no window":   {},
		"both":        {"--since", "1h", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-02T00:00:00Z"},
		"bad since":   {"--since", "-1h"},
		"bad format":  {"--since", "1h", "--format", "xml"},
		"bad from":    {"--from", "yesterday", "--to", "2026-01-02T00:00:00Z"},
		"reversed":    {"--from", "2026-01-02T00:00:00Z", "--to", "2026-01-01T00:00:00Z"},
		"only from":   {"--from", "2026-01-02T00:00:00Z"},
		"positional":  {"--since", "1h", "extra"},
		"unknown flg": {"--since", "1h", "--by", "hour"},
	} {
		if code, _, errs := run(t, dsn, args...); code != 2 || !strings.Contains(errs, "usage: civicgate usage export") {
			t.Errorf("%s: exit %d, %s", name, code, errs)
		}
	}
	if code, _, errs := run(t, dsn, "--since", "1h", "--org", "nobody"); code != 1 || !strings.Contains(errs, `no organization "nobody"`) {
		t.Errorf("unknown org: exit %d, %s", code, errs)
	}
	if code, _, errs := run(t, "", "--since", "1h"); code != 1 || !strings.Contains(errs, "DATABASE_URL is not set") {
		t.Errorf("no database: exit %d, %s", code, errs)
	}
}

// orgSource names a fixed organization (usage.OrgSource).
type orgSource string

func (o orgSource) Org() string { return string(o) }
