package webhooks

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/ratelimit/usage"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// DeprecationUsedType is the type of the notice an organization receives,
// once per schema coordinate, when its keys' operations read a deprecated
// coordinate (docs/design.md D79).
const DeprecationUsedType = "schema.deprecation_used"

// MaxNoticeOperations bounds the operations a deprecation notice names; the
// rest are counted in MoreOperations.
const MaxNoticeOperations = 20

// DeprecationUsed is the data of a schema.deprecation_used notice: the
// coordinate, the schema's reason (schema text: a receiver escapes it
// before showing it), the hour it was first seen in the usage kept, the
// requests of the organization's operations that read it and those
// operations, the most requests first.
type DeprecationUsed struct {
	Coordinate     string               `json:"coordinate"`
	Reason         string               `json:"reason"`
	FirstSeen      time.Time            `json:"first_seen"`
	Requests       int64                `json:"requests"`
	Operations     []usage.OperationRef `json:"operations"`
	MoreOperations int                  `json:"more_operations"`
}

// deprecationUsed is the notice data of u.
func deprecationUsed(u usage.DeprecatedUser) DeprecationUsed {
	ops := u.Operations
	more := max(0, len(ops)-MaxNoticeOperations)
	ops = ops[:len(ops)-more]
	if ops == nil {
		ops = []usage.OperationRef{}
	}
	return DeprecationUsed{Coordinate: u.Coordinate, Reason: u.Reason, FirstSeen: u.FirstSeen.UTC(), Requests: u.Requests,
		Operations: ops, MoreOperations: more}
}

// noticer sends the deprecation notices of the sidecar: every interval it
// reads, from the usage tables in the same database, which organizations'
// operations read a deprecated coordinate within the usage kept
// (usage.HourRetention), and notifies each pair not notified yet.
type noticer struct {
	store    *store.Store
	pool     *pgxpool.Pool
	interval time.Duration
	logger   *zap.Logger
	sent     func(typ string)
	now      func() time.Time

	warned time.Time // when the last failure was logged (run's goroutine only)
}

// run sends notices at once and then every interval until ctx ends.
func (n *noticer) run(ctx context.Context) {
	t := time.NewTicker(n.interval)
	defer t.Stop()
	for {
		if _, err := n.once(ctx); err != nil && ctx.Err() == nil {
			n.warn(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// warn logs a failure at most once a minute: the database away or the usage
// tables not migrated (civic_rate_limit not recording usage) fail every round.
func (n *noticer) warn(err error) {
	now := n.now()
	if now.Sub(n.warned) < time.Minute {
		return
	}
	n.warned = now
	msg := "civic_webhooks: sending deprecation notices failed; trying again"
	if errors.Is(err, usage.ErrNotMigrated) {
		msg = "civic_webhooks: no deprecation notices: the usage tables are not in this database (civic_rate_limit records usage there)"
	}
	n.logger.Warn(msg, zap.Error(err))
}

// once notifies every (organization, coordinate) pair in use and not yet
// notified, and returns the notices it sent. Another sidecar may send some of
// them at the same time: store.Notify sends each once.
func (n *noticer) once(ctx context.Context) (int, error) {
	now := n.now()
	// The organizations that can receive are read before the usage: a
	// notice reports at least what was counted when the organization's
	// first endpoint was seen, never a count read before it registered.
	receivers, err := n.store.Receivers(ctx)
	if err != nil || len(receivers) == 0 {
		return 0, err
	}
	users, err := usage.DeprecatedUsers(ctx, n.pool, now.Add(-usage.HourRetention))
	if err != nil {
		return 0, err
	}
	users = slices.DeleteFunc(users, func(u usage.DeprecatedUser) bool { return !receivers[u.Org] })
	if len(users) == 0 {
		return 0, nil
	}
	pairs := make([]store.Notice, len(users))
	byPair := make(map[store.Notice]usage.DeprecatedUser, len(users))
	for i, u := range users {
		pairs[i] = store.Notice{Org: u.Org, Subject: u.Coordinate}
		byPair[pairs[i]] = u
	}
	todo, err := n.store.Unnotified(ctx, pairs)
	if err != nil {
		return 0, err
	}
	sent := 0
	for _, p := range todo {
		ok, err := n.store.Notify(ctx, now, p.Org, p.Subject, DeprecationUsedType, deprecationUsed(byPair[p]))
		if err != nil {
			return sent, err
		}
		if ok {
			sent++
			n.sent(DeprecationUsedType)
		}
	}
	return sent, nil
}
