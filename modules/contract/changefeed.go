package contract

// The change feed (docs/design.md D14): the table every record change is
// written to in the change's own transaction, the advisory lock its writers
// hold and the channel they NOTIFY. One definition for both sides:
//
//   - writes: backend/mirror (every sync and delete of recordsd), and any
//     other backend that honours backend/migrations/sql/0100_sync.sql;
//   - reads: modules/webhooks (fan-out, GET /v1/changes, replay; D15) and
//     modules/gqlcache (invalidation; D35), which never import the backend.
//
// The protocol. A writer takes pg_advisory_xact_lock(ChangeEventsLockKey)
// before it draws event ids and holds it until it commits, and runs
// NOTIFY ChangeEventsChannel in the same transaction (both in one statement:
// ChangeEventsWriteLockSQL). PostgreSQL makes a commit visible before it
// releases the transaction's locks, so the events any snapshot sees are a
// gap-free prefix of the ids drawn so far: a reader polling
// `id > cursor ORDER BY id` never skips a committed event and needs no lock
// (modules/webhooks/store.Changes, modules/gqlcache invalidateFeed). A reader
// that must also know no writer is between drawing ids and committing — the
// webhook fan-out and replay — takes the same lock in shared mode
// (ChangeEventsSharedLockSQL). The notification is delivered only if the transaction commits; it
// only says "read the feed now" (its payload is empty), so a reader that
// misses one finds the events at its next poll or reconnect.
const (
	// ChangeEventsTable is the change feed's table (columns in
	// backend/migrations/sql/0100_sync.sql and docs/design.md D14). Readers'
	// and writers' SQL spells it out; TestChangeFeedMatchesMigrations checks
	// the migration creates this table.
	ChangeEventsTable = "change_events"
	// ChangeEventsLockKey is the pg_advisory_xact_lock key every writer of
	// ChangeEventsTable holds from before it draws ids until it commits
	// (exclusive), and the fan-out and replay hold in shared mode. It is an
	// arbitrary value beyond 32 bits, so it never meets the hashtext(…) keys
	// of the modules' migration locks; recordsd's migrations use 7_240_118_002.
	ChangeEventsLockKey int64 = 7_240_118_100
	// ChangeEventsChannel is the channel every writer NOTIFYs in the
	// transaction that adds events, and the webhook app and graphql_cache
	// LISTEN on (graphql_cache's `channel` default).
	ChangeEventsChannel = "civicgate_change_events"

	// ChangeEventsWriteLockSQL is the statement a writer runs in its
	// transaction before it draws event ids: it takes ChangeEventsLockKey
	// until commit and queues the NOTIFY on ChangeEventsChannel, which
	// PostgreSQL delivers at commit.
	ChangeEventsWriteLockSQL = `SELECT pg_advisory_xact_lock(7240118100), pg_notify('civicgate_change_events', '')`
	// ChangeEventsSharedLockSQL is the statement a reader runs in its
	// transaction when its snapshot must hold every event whose id is drawn
	// (the webhook fan-out and replay): it waits for a writer between drawing
	// ids and committing and keeps the next from starting until it ends.
	ChangeEventsSharedLockSQL = `SELECT pg_advisory_xact_lock_shared(7240118100)`
)
