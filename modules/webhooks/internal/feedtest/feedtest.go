// Package feedtest gives the webhook tests a real change feed: it creates the
// change_events table exactly as the documented contract describes it
// (backend/migrations/sql/0100_sync.sql, copied: modules never import the
// backend), the key store's tables (by the key store's own migration, so the
// contract the webhooks read is the real one) and the civic_webhooks tables,
// and writes events the way a contract-abiding writer does (under the feed's
// advisory lock).
package feedtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// ChangeEventsDDL is the documented change_events table.
const ChangeEventsDDL = `CREATE TABLE IF NOT EXISTS change_events (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id        uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
    family          text NOT NULL CHECK (family IN ('bills', 'members', 'regulatory_filings', 'federal_budgets', 'lobbying_disclosures')),
    record_id       text NOT NULL,
    type            text NOT NULL CHECK (type IN ('created', 'updated', 'deleted')),
    changed_fields  text[] NOT NULL DEFAULT '{}',
    record          jsonb NOT NULL,
    source          text NOT NULL DEFAULT '',
    occurred_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS change_events_family_idx ON change_events (family, id);`

// DB is a throwaway database with the feed and the webhook tables.
type DB struct {
	DSN  string
	Pool *pgxpool.Pool
}

// New creates the database (dropped when t ends) and migrates it.
func New(t testing.TB) *DB {
	t.Helper()
	dsn := testenv.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, ChangeEventsDDL); err != nil {
		t.Fatalf("change_events: %v", err)
	}
	if err := keystore.Migrate(ctx, pool); err != nil {
		t.Fatalf("key store: %v", err)
	}
	if err := store.Migrate(ctx, pool); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return &DB{DSN: dsn, Pool: pool}
}

// Tiers is the tier map the tests deliver with: the families of
// caddyfile/tiers.caddy (paid stands for paid_beta and enterprise).
func Tiers() store.Tiers {
	return store.Tiers{
		"free": {"bills", "members"},
		"paid": {"bills", "members", "regulatory_filings", "federal_budgets", "lobbying_disclosures", "changes"},
	}
}

// EventFamilies is the change-event families the tests' backend writes: the
// records service's, caddyfile/event-families.caddy.
func EventFamilies() []string {
	return []string{"bills", "members", "regulatory_filings", "federal_budgets", "lobbying_disclosures"}
}

// Org is an organization of the key store.
type Org struct {
	Name, ID string
	KeyID    string // its first live key
}

func ctx30() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// NewOrg creates the organization name with one live key of tier (as
// `civicgate keys issue` does).
func (db *DB) NewOrg(t testing.TB, name, tier string) Org {
	t.Helper()
	ctx, cancel := ctx30()
	defer cancel()
	iss, err := keystore.Issue(ctx, db.Pool, name, tier, "live")
	if err != nil {
		t.Fatal(err)
	}
	return Org{Name: name, ID: iss.OrgID, KeyID: iss.ID}
}

// Issue gives org another live key of tier and returns its id.
func (db *DB) Issue(t testing.TB, org Org, tier string) string {
	t.Helper()
	ctx, cancel := ctx30()
	defer cancel()
	iss, err := keystore.Issue(ctx, db.Pool, org.Name, tier, "live")
	if err != nil {
		t.Fatal(err)
	}
	return iss.ID
}

// Revoke revokes a key (as `civicgate keys revoke` does).
func (db *DB) Revoke(t testing.TB, keyID string) {
	t.Helper()
	ctx, cancel := ctx30()
	defer cancel()
	if _, err := keystore.Revoke(ctx, db.Pool, keyID); err != nil {
		t.Fatal(err)
	}
}

// SetStatus suspends or resumes org (as `civicgate keys suspend|resume` do;
// NOTIFY included).
func (db *DB) SetStatus(t testing.TB, org Org, status string) {
	t.Helper()
	ctx, cancel := ctx30()
	defer cancel()
	if err := keystore.SetOrgStatus(ctx, db.Pool, org.Name, status); err != nil {
		t.Fatal(err)
	}
}

// Insert writes n events of family in one transaction under the feed lock
// and returns their ids.
func (db *DB) Insert(t testing.TB, family string, n int) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ids []int64
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		var err error
		ids, err = InsertTx(ctx, tx, family, n)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// InsertTx takes the feed lock in tx and writes n events of family.
func InsertTx(ctx context.Context, tx pgx.Tx, family string, n int) ([]int64, error) {
	if _, err := tx.Exec(ctx, contract.ChangeEventsWriteLockSQL); err != nil {
		return nil, fmt.Errorf("feed lock: %w", err)
	}
	rows, err := tx.Query(ctx, `INSERT INTO change_events (family, record_id, type, changed_fields, record)
		SELECT $1, $1 || '-' || g, 'updated', ARRAY['title'], jsonb_build_object('id', $1 || '-' || g, 'title', 'T' || g)
		FROM generate_series(1, $2::int) g RETURNING id`, family, n)
	if err != nil {
		return nil, fmt.Errorf("insert events: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("insert events: %w", err)
	}
	return ids, nil
}

// TraceparentDDL is recordsd's migration 0104 (copied likewise): the writer's W3C traceparent on each event.
const TraceparentDDL = `ALTER TABLE change_events ADD COLUMN IF NOT EXISTS traceparent text`

// AddTraceparentColumn gives change_events the traceparent column (feeds of older backends have none).
func (db *DB) AddTraceparentColumn(t testing.TB) {
	t.Helper()
	ctx, cancel := ctx30()
	defer cancel()
	if _, err := db.Pool.Exec(ctx, TraceparentDDL); err != nil {
		t.Fatalf("traceparent column: %v", err)
	}
}

// InsertTraced writes one event of family carrying traceparent (as a traced sync does) and returns its id.
func (db *DB) InsertTraced(t testing.TB, family, traceparent string) int64 {
	t.Helper()
	ctx, cancel := ctx30()
	defer cancel()
	var id int64
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, contract.ChangeEventsWriteLockSQL); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO change_events (family, record_id, type, changed_fields, record, traceparent)
			VALUES ($1, $1 || '-traced', 'updated', ARRAY['title'], '{"title":"T"}', $2) RETURNING id`, family, traceparent).Scan(&id)
	})
	if err != nil {
		t.Fatalf("insert traced event: %v", err)
	}
	return id
}
