package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/contract"
)

// TestReadsServedByTheReplica runs the whole stack on a private primary with a streaming replica
// (docs/read-replicas.md): recordsd migrates and seeds on the primary and reads through DATABASE_READ_URL. With
// the replica's replay paused, a bill written on the primary without a change event is not in the gateway's
// answer — the replica served it, and the response cache stores that answer. Then the bill's change event
// commits (as a sync writes it): the cache drops its bills entries, and recordsd, seeing that the replica has not
// replayed the newest event, reads the primary — the same query now shows the bill (the lag bound, 10 min here,
// plays no part).
func TestReadsServedByTheReplica(t *testing.T) {
	t.Parallel()
	c := testenv.StartPostgresPrimaryWithReplica(t)
	c.CreateDatabase("civicgate")
	replica := c.Replicas[0]
	s := stack.New(t, &bins)
	s.Setenv("DATABASE_URL", c.Primary.DSN("civicgate"))
	s.Prepare()
	s.Setenv("DATABASE_READ_URL", replica.DSN("civicgate"))
	s.Setenv("DATABASE_READ_MAX_LAG", "10m") // only the change feed can move a read to the primary in this test
	rec := s.StartRecordsd()
	stack.WaitFor(t, 20*time.Second, "recordsd using the replica", func() error {
		return logHas(rec.Log, "read replica in use")
	})
	s.StartGateway("caddyfile/Caddyfile.local")
	key, _ := s.IssueKey("replicaorg", "enterprise", "live")

	billOnGateway := func(alias, id string) (found bool, cache string) {
		t.Helper()
		doc := fmt.Sprintf(`{"query":"{ %s: bill(id:\"%s\") { id } }"}`, alias, id)
		resp, err := trySend(s, "POST", "/v1/graphql", key, doc)
		if err != nil || resp.status != 200 {
			t.Fatalf("bill query: %v %d %s", err, resp.status, resp.body)
		}
		cache = resp.header.Get("Cache-Status")
		switch resp.body {
		case fmt.Sprintf(`{"data":{"%s":null}}`, alias):
			return false, cache
		case fmt.Sprintf(`{"data":{"%s":{"id":"%s"}}}`, alias, id):
			return true, cache
		}
		t.Fatalf("bill query answered %s", resp.body)
		return false, cache
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
	if found, _ := billOnGateway("seeded", seeded); !found {
		t.Fatalf("the seeded bill %s is missing", seeded)
	}

	c.PauseReplay(replica)
	const id = "hr99999-118"
	if _, err := conn.Exec(ctx, `INSERT INTO bills (id, congress, type, number, official_title, introduced_date, committee_names)
		VALUES ($1, 118, 'hr', 99999, 'A bill written while the replica is paused', DATE '2024-06-01', '')`, id); err != nil {
		t.Fatal(err)
	}
	if found, _ := billOnGateway("b", id); found {
		t.Fatal("the bill written on the primary was served although the replica is paused: the read did not go to the replica")
	}
	if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, contract.ChangeEventsWriteLockSQL); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO change_events (family, record_id, type, changed_fields, record, source)
			VALUES ('bills', $1, 'created', '{}', '{}'::jsonb, 'e2e')`, id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// The gateway drops the cached null when it processes the event (milliseconds); then the same query is a
	// miss that recordsd answers from the primary.
	stack.WaitFor(t, 10*time.Second, "the bill after its change event", func() error {
		if found, cache := billOnGateway("b", id); !found {
			return fmt.Errorf("not served yet (Cache-Status %q)", cache)
		}
		return nil
	})
	c.ResumeReplay(replica)
	s.CheckLogs(t, key, c.Primary.DSN("civicgate"), replica.DSN("civicgate"))

	// A bad replica setting stops recordsd at start, and an unparsable DSN is never echoed.
	const secret = "pw-Zq8vX2kLr"
	for env, want := range map[string]string{
		"DATABASE_READ_URL=" + replica.DSN("civicgate") + ",postgres://u:" + secret + "@h:notaport/db": "DATABASE_READ_URL entry 2 of 2 is not a valid PostgreSQL DSN",
		"DATABASE_READ_MAX_LAG=-1s":       "DATABASE_READ_MAX_LAG must be a positive duration",
		"DATABASE_READ_CONSISTENCY=fresh": "DATABASE_READ_CONSISTENCY must be feed (the default) or lag",
	} {
		name, value, _ := strings.Cut(env, "=")
		old := s.Getenv(name)
		s.Setenv(name, value)
		out, err := s.RunErr(bins.Recordsd, "serve")
		s.Setenv(name, old)
		if err == nil || !strings.Contains(out, want) || strings.Contains(out, secret) {
			t.Errorf("%s: recordsd serve = %v, %q; want a failure saying %q without the DSN", name, err, out, want)
		}
	}
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
