package store

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// The change-feed floor (docs/read-replicas.md "Consistency"): an answer read on a replica is kept only if the
// replica had replayed the newest change event the primary had when the read started, so every read reflects
// every sync committed before it (the response cache's assumption). The primary's newest event is looked up while
// the read runs on the replica, so the lookup adds a goroutine, not a round trip, to the read's latency.

// feedPositionSQL is the newest committed change event (0 for none): the last page of the primary key's index.
const feedPositionSQL = `SELECT coalesce(max(id), 0) FROM change_events`

// lookupFloor starts the lookup of the primary's newest change event; the channel yields it, or -1 when the
// primary did not answer within CheckTimeout (then the floor is skipped: the lag bound alone applies, as when the
// primary is down).
func (r *Replicas) lookupFloor(ctx context.Context) <-chan int64 {
	ch := make(chan int64, 1)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, r.opts.CheckTimeout) // a hung primary does not hold reads
		defer cancel()
		var id int64
		if err := r.primary.QueryRow(ctx, feedPositionSQL).Scan(&id); err != nil {
			id = -1
		}
		ch <- id
	}()
	return ch
}

// checkFloor decides about an answer fn read on rep, which had replayed change event known before fn started.
// When known is below floor (just after a sync), the replica's own position is read: if it has the event now, fn
// runs again on the replica (its new snapshot has it), else — or if that fails — on the primary.
func (r *Replicas) checkFloor(ctx context.Context, rep *replica, known, floor int64, fn func(db *pgxpool.Pool) error, span trace.Span) error {
	if floor < 0 || known >= floor {
		return nil
	}
	var replayed int64
	if err := rep.Pool.QueryRow(ctx, feedPositionSQL).Scan(&replayed); err == nil {
		rep.noteFeed(replayed)
		if replayed >= floor {
			if err := fn(rep.Pool); err == nil || ctx.Err() != nil {
				return err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r.behindFeed.Add(1)
	if span.IsRecording() {
		span.SetAttributes(attribute.String(ReadTargetAttribute, "primary (replica behind the change feed)"))
	}
	return fn(r.primary)
}

// noteFeed raises the replica's known change-feed position to id.
func (rep *replica) noteFeed(id int64) {
	for {
		cur := rep.feed.Load()
		if id <= cur || rep.feed.CompareAndSwap(cur, id) {
			return
		}
	}
}
