package e2e

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/modules/contract"
)

// asFeedWriter does in tx what every change_events writer does before it
// draws an event id (modules/contract/changefeed.go, docs/design.md D14):
// it holds the feed's lock until commit and NOTIFYs the feed's channel, which
// PostgreSQL delivers at commit.
func asFeedWriter(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1), pg_notify($2, '')`, contract.ChangeEventsLockKey, contract.ChangeEventsChannel)
	return err
}
