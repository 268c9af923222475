package usage

import (
	"context"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Quota threshold records (docs/design.md D81): the limiter reports a
// quota or cost budget that reached 80 % or 100 % of its limit in a window;
// the CrossingMeter keeps the first report of each (owner, policy, kind,
// level, window) per gateway, and the flush writes them to
// civicgate.quota_crossings with ON CONFLICT DO NOTHING, so each crossing is
// recorded once per window whatever the number of gateways. Whoever mails
// the notices reads UnmailedCrossings and calls MarkCrossingsMailed.

// Kinds of a crossing.
const (
	KindRequests = "requests"
	KindCost     = "cost"
)

// Crossing levels, in percent of the limit.
const (
	Level80  = 80
	Level100 = 100
)

// LevelOf is the highest level a policy of limit units with remaining left
// has reached (0: below 80 %).
func LevelOf(limit, remaining int64) int {
	switch {
	case limit <= 0:
		return 0
	case remaining <= 0:
		return Level100
	case (limit-remaining)*5 >= limit*4:
		return Level80
	}
	return 0
}

// WindowStart is the window of length w that holds at: windows are aligned
// on the Unix epoch (minutes on the minute, days at 00:00 UTC), so every
// gateway names the same one.
func WindowStart(at time.Time, w time.Duration) time.Time {
	if w <= 0 {
		return at.UTC()
	}
	n := at.UnixMicro()
	wu := w.Microseconds()
	s := n - n%wu
	if n%wu < 0 {
		s -= wu
	}
	return time.UnixMicro(s).UTC()
}

// Crossing is one threshold reached.
type Crossing struct {
	ID          int64         `json:"id"`
	OrgID       string        `json:"org_id"`
	KeyID       string        `json:"key_id,omitempty"` // "": counted per organization
	Policy      string        `json:"policy"`           // as RateLimit-Policy names it: free, paid_beta-day, free-cost
	Kind        string        `json:"kind"`             // KindRequests or KindCost
	Level       int           `json:"level"`            // Level80 or Level100
	WindowStart time.Time     `json:"window_start"`
	Window      time.Duration `json:"window"`
	Limit       int64         `json:"limit"` // the quota or budget in force (a grant's when one ran)
	CrossedAt   time.Time     `json:"crossed_at"`
	MailedAt    *time.Time    `json:"mailed_at,omitempty"`
}

// crossingKey is what makes a crossing the same one.
type crossingKey struct {
	org, key, policy string
	kind             string
	level            int
	window, end      int64 // µs: the window's start and end
}

// DefaultMaxCrossings bounds the crossings a CrossingMeter remembers.
const DefaultMaxCrossings = 100_000

// CrossingMeter remembers the crossings seen on this gateway (so a key
// refused a thousand times in a window is reported once) and holds the new
// ones until the next flush. It is sharded like the Meter; a report already
// seen costs a map lookup under its shard's lock and allocates nothing.
type CrossingMeter struct {
	seed    maphash.Seed
	max     int64
	shards  [shardCount]crossingShard
	held    atomic.Int64
	dropped atomic.Int64
}

type crossingShard struct {
	mu      sync.Mutex
	seen    map[crossingKey]struct{}
	pending []Crossing
	_       [64 - 40]byte
}

// NewCrossingMeter returns a CrossingMeter remembering at most max
// crossings (DefaultMaxCrossings when max <= 0); past it, a shard forgets
// the windows that have ended, and reports beyond the bound are dropped
// (the database's unique key still keeps them once).
func NewCrossingMeter(max int) *CrossingMeter {
	if max <= 0 {
		max = DefaultMaxCrossings
	}
	m := &CrossingMeter{seed: maphash.MakeSeed(), max: int64(max)}
	for i := range m.shards {
		m.shards[i].seen = make(map[crossingKey]struct{})
	}
	return m
}

// Add reports c (ID and MailedAt ignored); it is kept for the next flush
// unless this gateway saw the same crossing already.
func (m *CrossingMeter) Add(c Crossing) {
	start := c.WindowStart.UnixMicro()
	k := crossingKey{org: c.OrgID, key: c.KeyID, policy: c.Policy, kind: c.Kind, level: c.Level,
		window: start, end: start + c.Window.Microseconds()}
	s := &m.shards[(maphash.String(m.seed, c.OrgID)^maphash.String(m.seed, c.KeyID))&(shardCount-1)]
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.seen[k]; ok {
		return
	}
	if m.held.Load() >= m.max {
		m.forgetEnded(s, c.CrossedAt)
		if m.held.Load() >= m.max {
			m.dropped.Add(1)
			return
		}
	}
	k.org, k.key, k.policy = strings.Clone(k.org), strings.Clone(k.key), strings.Clone(k.policy)
	c.OrgID, c.KeyID, c.Policy = pgText(k.org), pgText(k.key), pgText(k.policy)
	s.seen[k] = struct{}{}
	m.held.Add(1)
	s.pending = append(s.pending, c)
}

// maxText bounds a recorded name (a policy may come from a request header).
const maxText = 256

// pgText is s as PostgreSQL text holds it, at most maxText bytes: NUL and
// bytes that are not UTF-8 become U+FFFD, so one hostile name cannot fail
// every flush of the batch it is in.
func pgText(s string) string {
	if len(s) > maxText {
		s = s[:maxText]
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// forgetEnded drops from s the crossings whose window ended before now.
func (m *CrossingMeter) forgetEnded(s *crossingShard, now time.Time) {
	n := now.UnixMicro()
	for k := range s.seen {
		if k.end <= n {
			delete(s.seen, k)
			m.held.Add(-1)
		}
	}
}

// Drain takes the crossings reported since the last Drain.
func (m *CrossingMeter) Drain() []Crossing {
	var out []Crossing
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		out = append(out, s.pending...)
		s.pending = nil
		s.mu.Unlock()
	}
	return out
}

// Dropped is how many new crossings found the meter full.
func (m *CrossingMeter) Dropped() int64 { return m.dropped.Load() }

// writeCrossings inserts cs in tx, each once per window.
func writeCrossings(ctx context.Context, tx pgx.Tx, cs []Crossing) error {
	if len(cs) == 0 {
		return nil
	}
	n := len(cs)
	orgs, keys, policies, kinds := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	levels, secs, limits := make([]int32, n), make([]int64, n), make([]int64, n)
	starts, at := make([]time.Time, n), make([]time.Time, n)
	for i, c := range cs {
		orgs[i], keys[i], policies[i], kinds[i] = c.OrgID, c.KeyID, c.Policy, c.Kind
		levels[i], secs[i], limits[i] = int32(c.Level), max(1, int64(c.Window/time.Second)), c.Limit
		starts[i], at[i] = c.WindowStart, c.CrossedAt
	}
	if _, err := tx.Exec(ctx, `INSERT INTO civicgate.quota_crossings
			(org_id, key_id, policy, kind, level, window_start, window_secs, "limit", crossed_at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int2[], $6::timestamptz[], $7::int8[], $8::int8[], $9::timestamptz[])
		ORDER BY 1, 2, 3, 4, 5, 6
		ON CONFLICT (org_id, key_id, policy, kind, level, window_start) DO NOTHING`,
		orgs, keys, policies, kinds, levels, starts, secs, limits, at); err != nil {
		return fmt.Errorf("quota crossings: %w", err)
	}
	return nil
}

// UnmailedCrossings returns up to limit crossings not marked mailed, oldest
// first (limit <= 0: 100).
func UnmailedCrossings(ctx context.Context, pool *pgxpool.Pool, limit int) ([]Crossing, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := pool.Query(ctx, `SELECT id, org_id, key_id, policy, kind, level, window_start, window_secs, "limit", crossed_at
		FROM civicgate.quota_crossings WHERE mailed_at IS NULL ORDER BY id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("usage: unmailed crossings: %w", schemaErr(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Crossing, error) {
		var c Crossing
		var level int16
		var secs int64
		err := r.Scan(&c.ID, &c.OrgID, &c.KeyID, &c.Policy, &c.Kind, &level, &c.WindowStart, &secs, &c.Limit, &c.CrossedAt)
		c.Level, c.Window = int(level), time.Duration(secs)*time.Second
		c.WindowStart, c.CrossedAt = c.WindowStart.UTC(), c.CrossedAt.UTC()
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("usage: unmailed crossings: %w", err)
	}
	return out, nil
}

// Execer is what MarkCrossingsMailed writes with: a pool, or the
// transaction that also records the mail (an outbox row), so the mark and
// the mail commit together.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// MarkCrossingsMailed sets mailed_at on the crossings ids that are not
// marked yet and returns how many it marked.
func MarkCrossingsMailed(ctx context.Context, q Execer, ids []int64) (int64, error) {
	tag, err := q.Exec(ctx, `UPDATE civicgate.quota_crossings SET mailed_at = now() WHERE id = ANY($1) AND mailed_at IS NULL`, ids)
	if err != nil {
		return 0, fmt.Errorf("usage: mark crossings mailed: %w", schemaErr(err))
	}
	return tag.RowsAffected(), nil
}
