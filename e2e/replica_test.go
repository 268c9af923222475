package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/internal/stack"
	"github.com/civicgate/civicgate/internal/testenv"
)

// TestReadsServedByTheReplica runs the whole stack on a private primary with a streaming replica
// (docs/read-replicas.md): recordsd migrates and seeds on the primary and reads through DATABASE_READ_URL. With
// the replica's replay paused, a bill committed on the primary (with its change event, as a sync writes it) is
// not in the gateway's answer — the replica served it — until the replica's lag passes the default maximum (5 s);
// then recordsd reads the primary and the bill is there, while the replica is still paused.
func TestReadsServedByTheReplica(t *testing.T) {
	t.Parallel()
	c := testenv.StartPostgresPrimaryWithReplica(t)
	c.CreateDatabase("civicgate")
	replica := c.Replicas[0]
	s := stack.New(t, &bins)
	s.Setenv("DATABASE_URL", c.Primary.DSN("civicgate"))
	s.Prepare()
	s.Setenv("DATABASE_READ_URL", replica.DSN("civicgate"))
	rec := s.StartRecordsd()
	stack.WaitFor(t, 20*time.Second, "recordsd using the replica", func() error {
		return logHas(rec.Log, "read replica in use")
	})
	s.StartGateway("caddyfile/Caddyfile.local")
	key, _ := s.IssueKey("replicaorg", "enterprise", "live")

	n := 0
	billOnGateway := func(id string) (found bool) {
		t.Helper()
		n++ // a new alias each time: a new cache key, so every answer is recordsd's
		doc := fmt.Sprintf(`{"query":"{ r%d: bill(id:\"%s\") { id } }"}`, n, id)
		resp, err := trySend(s, "POST", "/v1/graphql", key, doc)
		if err != nil || resp.status != 200 {
			t.Fatalf("bill query: %v %d %s", err, resp.status, resp.body)
		}
		switch resp.body {
		case fmt.Sprintf(`{"data":{"r%d":null}}`, n):
			return false
		case fmt.Sprintf(`{"data":{"r%d":{"id":"%s"}}}`, n, id):
			return true
		}
		t.Fatalf("bill query answered %s", resp.body)
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.Primary.DSN("civicgate"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var seeded string
	if err := conn.QueryRow(ctx, `SELECT id FROM bills ORDER BY id LIMIT 1`).Scan(&seeded); err != nil {
		t.Fatal(err)
	}
	if !billOnGateway(seeded) {
		t.Fatalf("the seeded bill %s is missing", seeded)
	}

	c.PauseReplay(replica)
	const id = "hr99999-118"
	if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7240118100)`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO bills (id, congress, type, number, official_title, introduced_date, committee_names)
			VALUES ($1, 118, 'hr', 99999, 'A bill written while the replica is paused', DATE '2024-06-01', '')`, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO change_events (family, record_id, type, changed_fields, record, source)
			VALUES ('bills', $1, 'created', '{}', '{}'::jsonb, 'e2e')`, id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify('civicgate_change_events', '')`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	if billOnGateway(id) {
		t.Fatalf("the bill written on the primary was served %s after the write although the replica is paused: the read did not go to the replica", time.Since(written))
	}
	stack.WaitFor(t, 30*time.Second, "the read to move to the primary", func() error {
		if !billOnGateway(id) {
			return fmt.Errorf("still not served")
		}
		return nil
	})
	if d := time.Since(written); d < 5*time.Second {
		t.Fatalf("the read moved to the primary %s after the write, before the replica could lag 5 s", d)
	}
	if err := logHas(rec.Log, "no read replica is usable: reads go to the primary"); err != nil {
		t.Fatal(err)
	}
	c.ResumeReplay(replica)
	s.CheckLogs(t, key, c.Primary.DSN("civicgate"), replica.DSN("civicgate"))
}

func logHas(path, text string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !strings.Contains(string(b), text) {
		return fmt.Errorf("%q not in %s", text, path)
	}
	return nil
}
