// Package store is the PostgreSQL side of civic_webhooks: its schema
// (embedded migrations), the change feed reader, endpoints, the fan-out of
// change events into deliveries, and the delivery leases that several sidecar
// instances share through FOR UPDATE SKIP LOCKED.
//
// It reads the change_events table of any backend that honours this contract
// (backend/migrations/sql/0100_sync.sql):
//
//	change_events(id bigint identity, event_id uuid, family text, record_id text,
//	              type text, changed_fields text[], record jsonb, occurred_at timestamptz)
//
// and, if present, traceparent text (recordsd's migration 0104: the W3C traceparent of the span that wrote the
// event, which a traced delivery links to; see ReadTraceparents),
//
// and every writer holds pg_advisory_xact_lock(contract.ChangeEventsLockKey)
// from before it draws ids until it commits, so ids become visible in id
// order. A writer that also runs NOTIFY contract.ChangeEventsChannel in that
// transaction has its events fanned out at once; without it they are found by
// the next poll (modules/contract/changefeed.go, docs/design.md D14).
//
// It also reads the key store's tables in the same database (written by
// modules/auth/keystore, read here without importing it):
//
//	civicgate.organizations(id text, status text: active|suspended|deleted)
//	civicgate.api_keys(org_id text, env text, tier text, status text: active|rotating|revoked|rotated,
//	                   rotates_out_at timestamptz: the end of a rotating key's overlap)
//
// so fan-out and claim honour each organization's status and the families of
// the tiers of its active keys as they are when each statement runs (see
// endpointState), and LISTENs on AuthChannel to park and resume at once.
package store

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/pgmigrate"
	"github.com/civicgate/civicgate/modules/contract"
)

// Listen holds one connection LISTENing on contract.ChangeEventsChannel and AuthChannel and
// calls notified with the channel of every notification until ctx ends or
// the connection fails (the error is returned; the caller listens again).
// ready, if not nil, is called once both LISTENs are in place.
func (s *Store) Listen(ctx context.Context, ready func(), notified func(channel string)) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("store: listen: %w", err)
	}
	// The connection had a LISTEN: never hand it back to the pool.
	defer func() { _ = conn.Hijack().Close(context.WithoutCancel(ctx)) }()
	for _, ch := range []string{contract.ChangeEventsChannel, AuthChannel} {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return fmt.Errorf("store: listen: %w", err)
		}
	}
	if ready != nil {
		ready()
	}
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("store: listen: %w", err)
		}
		notified(n.Channel)
	}
}

// ErrNotFound is returned for an endpoint that does not exist or belongs to
// another organization (the API answers 404 for both).
var ErrNotFound = errors.New("store: not found")

// Migrate creates or upgrades the civic_webhooks tables in schema civicgate
// (embedded migrations/NNNN_name.sql) through pgmigrate: idempotent, safe to
// run concurrently, recorded in civicgate.civic_webhooks_migrations
// (docs/design.md D60).
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pgmigrate.Migrate(ctx, pool, Ledger()); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	return nil
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Ledger is the webhooks tables' migrations and where they are recorded.
func Ledger() pgmigrate.Ledger {
	return pgmigrate.Ledger{Table: "civicgate.civic_webhooks_migrations", Files: pgmigrate.Sub(migrationFiles, "migrations")}
}
