package gqlcache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"
)

// listenConfig is a validated `invalidate postgres` block.
type listenConfig struct {
	dsn     string // never logged
	channel string
	feed    string // "" : the payload names the tags
}

// Listener timing: how long a quiet connection waits before it is pinged
// (a connection that hangs without closing is found out), and the backoff
// between attempts to listen again.
const (
	idlePing    = 15 * time.Second
	pingTimeout = 5 * time.Second
	backoffMin  = 100 * time.Millisecond
	backoffMax  = 5 * time.Second
)

// run listens until ctx ends. Whenever the listener is not listening the
// store is flushed and serves no hits (instance.listening), so that no
// answer outlives a change the listener could have missed.
func (in *instance) run(ctx context.Context) {
	backoff := backoffMin
	for {
		err := in.listenOnce(ctx, func() { backoff = backoffMin })
		if ctx.Err() != nil {
			in.setDown()
			return
		}
		wasUp := in.setDown()
		log := in.logger.Load()
		if wasUp {
			log.Warn("graphql_cache invalidation listener lost: store flushed, no hits until it listens again",
				zap.String("channel", in.listen.channel), zap.String("error", describe(err)))
		} else {
			log.Debug("graphql_cache invalidation listener cannot listen yet",
				zap.String("channel", in.listen.channel), zap.String("error", describe(err)))
		}
		timer := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		backoff = min(2*backoff, backoffMax)
	}
}

// setDown marks the listener down and flushes the store; it returns
// whether it was up.
func (in *instance) setDown() bool {
	wasUp := in.up.Swap(false)
	in.store.flush()
	m := in.store.metrics.Load()
	m.listenerUp.Set(0)
	if wasUp {
		m.flushes.Inc()
	}
	in.signal()
	return wasUp
}

// listenOnce connects, LISTENs, reads the feed's cursor, flushes once more
// (whatever changed before the cursor is gone), and then serves: every
// notification invalidates what it names. It returns when the connection
// fails or ctx ends.
func (in *instance) listenOnce(ctx context.Context, listening func()) error {
	lc := in.listen
	conn, err := pgx.Connect(ctx, lc.dsn)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{lc.channel}.Sanitize()); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	var cursor int64
	if lc.feed != "" {
		if err := conn.QueryRow(ctx, "SELECT coalesce(max(id), 0) FROM "+feedTable(lc.feed)).Scan(&cursor); err != nil {
			return fmt.Errorf("read the feed's cursor: %w", err)
		}
	}
	if in.shared != nil {
		in.shared.reset(cursor) // before the flush: no entry put after it predates the cursor unseen
	}
	in.store.flush()
	m := in.store.metrics.Load()
	m.flushes.Inc()
	in.up.Store(true)
	m.listenerUp.Set(1)
	in.logger.Load().Info("graphql_cache invalidation listener listening", zap.String("channel", lc.channel), zap.String("feed", lc.feed))
	in.signal()
	listening()
	for {
		wctx, cancel := context.WithTimeout(ctx, in.idlePing)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed() {
				pctx, cancel := context.WithTimeout(ctx, pingTimeout)
				err = conn.Ping(pctx)
				cancel()
				if err == nil {
					in.pings.Add(1)
					in.signal()
					continue
				}
			}
			return fmt.Errorf("wait for notification: %w", err)
		}
		if lc.feed == "" {
			in.invalidatePayload(n.Payload)
			continue
		}
		if cursor, err = in.invalidateFeed(ctx, conn, cursor); err != nil {
			return err
		}
	}
}

// invalidatePayload invalidates the comma-separated tags of a payload; an
// empty one (a change, not saying what) flushes the store.
func (in *instance) invalidatePayload(payload string) {
	var tags []string
	for t := range (tagList{csv: payload}).each {
		tags = append(tags, t)
	}
	if len(tags) == 0 {
		in.store.flush()
		in.store.metrics.Load().flushes.Inc()
	} else {
		in.store.invalidate(tags)
	}
	in.signal()
}

// invalidateFeed invalidates the families of the feed's rows past cursor
// and returns the new cursor. Writers hold the feed's advisory lock
// (contract.ChangeEventsLockKey) until they commit, so ids become visible in
// order and none is skipped (modules/contract/changefeed.go).
func (in *instance) invalidateFeed(ctx context.Context, conn *pgx.Conn, cursor int64) (int64, error) {
	rows, err := conn.Query(ctx, "SELECT family, max(id) FROM "+feedTable(in.listen.feed)+" WHERE id > $1 AND family IS NOT NULL GROUP BY family", cursor)
	if err != nil {
		return cursor, fmt.Errorf("read the feed: %w", err)
	}
	var families []string
	ids := map[string]int64{}
	next := cursor
	for rows.Next() {
		var family string
		var id int64
		if err := rows.Scan(&family, &id); err != nil {
			rows.Close()
			return cursor, fmt.Errorf("read the feed: %w", err)
		}
		families = append(families, family)
		ids[family] = id
		next = max(next, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return cursor, fmt.Errorf("read the feed: %w", err)
	}
	if in.shared != nil {
		// Before the local invalidation: a request whose key has the new
		// generations sees these ids when it checks a shared entry.
		in.shared.changed(ids, next)
	}
	in.store.invalidate(families)
	in.signal()
	return next, nil
}

// feedTable quotes a table name, optionally schema-qualified.
func feedTable(name string) string {
	return pgx.Identifier(strings.Split(name, ".")).Sanitize()
}

// describe is an error for the log without the DSN: pgx's connect errors
// name the user and database, so only the network cause is kept.
func describe(err error) string {
	if err == nil {
		return ""
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		if cause := errors.Unwrap(ce); cause != nil {
			return "connect: " + cause.Error()
		}
		return "connect failed"
	}
	return err.Error()
}
