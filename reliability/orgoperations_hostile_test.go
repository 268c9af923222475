package reliability

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// An organization's operations (usage.OrganizationOperations, docs/design.md
// D83) under hostile input, against real PostgreSQL: organization values
// built to inject SQL, markup, a NUL, bytes that are no UTF-8 and a 64 KiB
// name find nothing — no other organization's rows, no SQL in the error,
// the tables intact (the value is named back only quoted) —; a flood of keys running one operation and one key
// running many answers one row per operation, the keys counted exactly.

type orgSource string

func (o orgSource) Org() string { return string(o) }

func TestOrganizationOperationsHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := keystore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if err := usage.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	op := func(i int) *contract.GraphQLOperation {
		return &contract.GraphQLOperation{Type: "query", Name: fmt.Sprintf("Op%d", i), DocumentHash: fmt.Sprintf("%064x", i+1)}
	}
	// 3 000 keys run Op0 once; key_many runs 400 operations; another
	// organization runs Op0 too.
	const keys, many = 3000, 400
	m := usage.NewOperationMeter(0, 1000)
	for k := range keys {
		m.Add(&usage.OperationSample{KeyID: fmt.Sprintf("key_%04d", k), Org: orgSource("org_flood"), At: now, Operation: op(0), Latency: time.Millisecond})
	}
	for i := range many {
		m.Add(&usage.OperationSample{KeyID: "key_many", Org: orgSource("org_flood"), At: now, Operation: op(i), Latency: time.Millisecond})
	}
	m.Add(&usage.OperationSample{KeyID: "key_other", Org: orgSource("org_other"), At: now, Operation: op(0), Latency: time.Millisecond})
	rows, recs := m.Drain()
	if _, err := usage.WriteFlush(ctx, pool, usage.NewBatchID(), usage.Batch{Operations: rows, Records: recs}); err != nil {
		t.Fatal(err)
	}

	ops, err := usage.OrganizationOperations(ctx, pool, usage.OperationsArgs{Org: "org_flood", Since: time.Hour, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != many || ops[0].Name != "Op0" || ops[0].Keys != keys+1 || ops[0].Requests != keys+1 {
		t.Fatalf("%d operations, first %+v; want %d, Op0 run by %d keys", len(ops), ops[0], many, keys+1)
	}
	for _, o := range ops[1:] {
		if o.Keys != 1 || o.Requests != 1 {
			t.Fatalf("%+v: want one key, one request", o)
		}
	}

	for _, org := range []string{
		"' OR '1'='1",
		"org_flood'; DROP TABLE civicgate.usage_operation_keys; --",
		"org_flood' --",
		"<script>alert(1)</script>",
		"org_flood\x00",
		"\xff\xfeorg",
		strings.Repeat("o", 64<<10),
		"%", "_", "org_%",
	} {
		got, err := usage.OrganizationOperations(ctx, pool, usage.OperationsArgs{Org: org, Since: 90 * 24 * time.Hour, Now: now})
		if err == nil || len(got) != 0 {
			t.Errorf("org %.40q answered %d operations (%v)", org, len(got), err)
			continue
		}
		// An unknown organization is named back, quoted (as every usage
		// answer names it); the rest of the message must say nothing of
		// the query.
		msg := strings.Replace(err.Error(), strconv.Quote(org), "", 1)
		if !errors.Is(err, usage.ErrUnknownOrg) && !strings.HasPrefix(msg, "usage: ") {
			t.Errorf("org %.40q: error %q is not the usage package's", org, msg)
		}
		for _, leak := range []string{"SELECT", "civicgate.", "usage_operation", "org_flood'"} {
			if strings.Contains(msg, leak) {
				t.Errorf("org %.40q: error %.200q names %q", org, msg, leak)
			}
		}
	}
	var tables int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM civicgate.usage_operation_keys`).Scan(&tables); err != nil || tables != keys+many+1 {
		t.Fatalf("usage_operation_keys after the hostile names: %d rows (%v), want %d", tables, err, keys+many+1)
	}
	if _, err := usage.OrganizationOperations(ctx, pool, usage.OperationsArgs{Org: "org_flood", Since: -time.Hour, Now: now}); !errors.Is(err, usage.ErrBadQuery) {
		t.Fatalf("a negative window: %v, want ErrBadQuery", err)
	}
}
