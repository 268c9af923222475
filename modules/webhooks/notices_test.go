package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
	"github.com/civicgate/civicgate/modules/webhooks/internal/feedtest"
	"github.com/civicgate/civicgate/modules/webhooks/secretbox"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

type orgOf string

func (o orgOf) Org() string { return string(o) }

// recordOps writes n requests of op by key of org at at, as a gateway's flush.
func recordOps(t *testing.T, db *feedtest.DB, key, org string, op *contract.GraphQLOperation, n int, at time.Time) {
	t.Helper()
	m := usage.NewOperationMeter(0, 0)
	for range n {
		m.Add(&usage.OperationSample{KeyID: key, Org: orgOf(org), At: at, Operation: op, Cost: 1, Latency: time.Millisecond})
	}
	ops, recs := m.Drain()
	if _, err := usage.WriteFlush(context.Background(), db.Pool, usage.NewBatchID(), usage.Batch{Operations: ops, Records: recs}); err != nil {
		t.Fatal(err)
	}
}

func deprecatedOp(name string, hash int, coordinate, reason string) *contract.GraphQLOperation {
	return &contract.GraphQLOperation{Type: "query", Name: name, DocumentHash: fmt.Sprintf("%064x", hash),
		Shape: &contract.OperationShape{Coordinates: []string{coordinate, "Query.bills"}, Deprecated: []string{coordinate},
			DeprecationReasons: []string{reason}, Normalized: "query " + name + "{x}"}}
}

// TestNoticerSendsOnce: a round notifies each organization that used a
// deprecated coordinate once, with at most MaxNoticeOperations operations
// named and the rest counted; the next round sends nothing; an organization
// that did not use it gets nothing.
func TestNoticerSendsOnce(t *testing.T) {
	db := feedtest.New(t)
	ctx := context.Background()
	if err := usage.Migrate(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	box, err := secretbox.New([]byte("notice-test-sealing-material-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(db.Pool, box)
	a, b := db.NewOrg(t, "dep-a", "paid"), db.NewOrg(t, "dep-b", "paid")
	var eps []store.Endpoint
	for _, o := range []feedtest.Org{a, b} {
		ep, _, err := st.CreateEndpoint(ctx, time.Now(), store.EndpointSpec{Org: o.ID, Env: "live", URL: "https://example.org/" + o.Name,
			Families: []string{"bills"}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, ep)
	}
	now := time.Now()
	for i := range MaxNoticeOperations + 5 {
		recordOps(t, db, a.KeyID, a.ID, deprecatedOp(fmt.Sprintf("Op%02d", i), 0x100+i, "Bill.title", "Use <b>name</b>"), i+1, now)
	}
	recordOps(t, db, b.KeyID, b.ID, &contract.GraphQLOperation{Type: "query", Name: "Plain", DocumentHash: fmt.Sprintf("%064x", 0xd),
		Shape: &contract.OperationShape{Coordinates: []string{"Bill.name", "Query.bills"}, Normalized: "query Plain{x}"}}, 9, now)

	counted := map[string]int{}
	n := &noticer{store: st, pool: db.Pool, interval: time.Minute, logger: zap.NewNop(), now: time.Now,
		sent: func(typ string) { counted[typ]++ }}
	if sent, err := n.once(ctx); err != nil || sent != 1 || counted[DeprecationUsedType] != 1 {
		t.Fatalf("first round: %d sent, %v counted, %v", sent, counted, err)
	}
	if sent, err := n.once(ctx); err != nil || sent != 0 {
		t.Fatalf("second round: %d sent %v", sent, err)
	}
	var payload []byte
	var kinds []string
	rows, err := db.Pool.Query(ctx, `SELECT kind, payload FROM civicgate.webhook_deliveries WHERE endpoint_id = $1`, eps[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k, &payload); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, k)
	}
	if len(kinds) != 1 || kinds[0] != store.KindNotice {
		t.Fatalf("a's deliveries: %v", kinds)
	}
	var env struct {
		Type string          `json:"type"`
		Data DeprecationUsed `json:"data"`
	}
	if err := json.Unmarshal(payload, &env); err != nil {
		t.Fatal(err)
	}
	d := env.Data
	if env.Type != DeprecationUsedType || d.Coordinate != "Bill.title" || d.Reason != "Use <b>name</b>" ||
		len(d.Operations) != MaxNoticeOperations || d.MoreOperations != 5 || d.Operations[0].Name != "Op24" ||
		d.Operations[0].Requests != 25 || d.Requests != 25*26/2 || d.FirstSeen.IsZero() {
		t.Errorf("notice %s", payload)
	}
	var nb int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM civicgate.webhook_deliveries WHERE endpoint_id = $1`, eps[1].ID).Scan(&nb); err != nil || nb != 0 {
		t.Errorf("b, which read no deprecated field: %d deliveries %v", nb, err)
	}
}
