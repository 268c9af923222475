package keystore

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore/oldledger"
)

// TestMigrationThreeUpgradesKeys: a database at version 2 of the old ledger
// (oldledger) with keys in it is upgraded by Migrate (as `keys migrate`
// after an upgrade does; the old version 3 is file 0002 now): the keys
// keep their status, rotating keys and deleted organizations become
// possible, and the constraints still refuse what they should.
func TestMigrationThreeUpgradesKeys(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := oldledger.Build(ctx, pool, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO civicgate.organizations (id, name) VALUES ('org_old', 'old')`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO civicgate.api_keys (id, org_id, env, tier, key_hash, key_prefix) VALUES ('key_old', 'org_old', 'live', 'free', $1, 'cg_live_xxxx')`,
		hashBytes("old")); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE civicgate.api_keys SET status = 'rotating'`); err == nil {
		t.Fatal("migration 2 accepted a rotating key")
	}
	if err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := pool.QueryRow(ctx, `SELECT max(version) FROM civicgate.keystore_migrations`).Scan(&v); err != nil || v != 6 {
		t.Fatalf("version %d %v", v, err)
	}
	if r, err := Lookup(ctx, pool, HashKey("old")); err != nil || r.Status != StatusActive || !r.RotatesOut.IsZero() {
		t.Fatalf("old key after the upgrade: %+v %v", r, err)
	}
	rot, err := Rotate(ctx, pool, RotateSpec{Org: "old", Env: EnvLive, Overlap: time.Hour})
	if err != nil || rot.Rotating != "key_old" {
		t.Fatalf("rotate after the upgrade: %+v %v", rot, err)
	}
	if r, err := Lookup(ctx, pool, HashKey("old")); err != nil || r.Status != StatusRotating || r.EffectiveStatus(time.Now()) != StatusRotating ||
		r.EffectiveStatus(r.RotatesOut) != StatusRotated {
		t.Fatalf("rotating key: %+v %v", r, err)
	}
	if _, err := pool.Exec(ctx, `UPDATE civicgate.api_keys SET rotates_out_at = NULL WHERE id = 'key_old'`); err == nil {
		t.Fatal("a rotating key without a deadline was accepted")
	}
	if _, err := DeleteOrg(ctx, pool, "old"); err != nil {
		t.Fatal(err)
	}
	if r, err := Lookup(ctx, pool, HashKey("old")); err != nil || r.Status != StatusRevoked || r.OrgStatus != OrgDeleted {
		t.Fatalf("after delete-org: %+v %v", r, err)
	}
	if err := Migrate(ctx, pool); err != nil { // idempotent
		t.Fatal(err)
	}
}

func hashBytes(key string) []byte {
	h := HashKey(key)
	return h[:]
}
