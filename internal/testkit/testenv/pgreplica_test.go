package testenv

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestPGClusterReplicates: a row written on the primary reaches the replica; with
// replay paused it does not until replay resumes; a replica is read-only.
func TestPGClusterReplicates(t *testing.T) {
	c := StartPostgresPrimaryWithReplica(t)
	r := c.Replicas[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pc := c.Primary.Conn("postgres")
	rc := r.Conn("postgres")
	if _, err := pc.Exec(ctx, `CREATE TABLE t (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		t.Helper()
		var n int
		if err := rc.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := pc.Exec(ctx, `INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	c.WaitCaughtUp(r)
	if n := count(); n != 1 {
		t.Fatalf("replica sees %d rows, want 1", n)
	}
	c.PauseReplay(r)
	if _, err := pc.Exec(ctx, `INSERT INTO t VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	// The replica receives the WAL (its receive position passes the insert) but does not apply it.
	r.poll(10*time.Second, "receive the insert", func(ctx context.Context) error {
		var behind bool
		if err := r.queryOne(ctx, `SELECT pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn()`, &behind); err != nil {
			return err
		}
		if !behind {
			return errors.New("received WAL is all replayed")
		}
		return nil
	})
	if n := count(); n != 1 {
		t.Fatalf("paused replica sees %d rows, want 1", n)
	}
	c.ResumeReplay(r)
	c.WaitCaughtUp(r)
	if n := count(); n != 2 {
		t.Fatalf("resumed replica sees %d rows, want 2", n)
	}
	if _, err := rc.Exec(ctx, `INSERT INTO t VALUES (3)`); err == nil {
		t.Fatal("a write on the replica succeeded")
	}
	r.Stop()
	if _, err := rc.Exec(ctx, `SELECT 1`); err == nil {
		t.Fatal("a stopped replica answered")
	}
}
