package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// UsageConfig turns on usage counting per key (docs/design.md D28): counted
// in memory, flushed to PostgreSQL every FlushInterval by every gateway
// (additive upserts), read by `civicgate keys usage`.
type UsageConfig struct {
	// PostgreSQL DSN, usually {env.DATABASE_URL} (the key database; the
	// tables come with `civicgate keys migrate`).
	Postgres string `json:"postgres,omitempty"`
	// How often counts are written (default 5s, 1s … 1m). A gateway lost
	// without a clean stop loses at most this much of its counts.
	FlushInterval caddy.Duration `json:"flush_interval,omitempty"`
	// Bound on (key, minute) cells held between flushes (default 100000).
	MaxCells int `json:"max_cells,omitempty"`
}

// usageSink is the limiter's usage counting: the meter every request adds
// to and the flusher that writes it. It lives with the limiter in the usage
// pool, so counts survive a reload; the flusher runs from the first App
// Start to the limiter's Destruct (a last flush).
type usageSink struct {
	meter   *usage.Meter
	pool    *pgxpool.Pool
	flusher *usage.Flusher
	mu      sync.Mutex
	started bool
}

func newUsageSink(dsn string, interval time.Duration, maxCells int, logger *zap.Logger) (*usageSink, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("usage postgres DSN does not parse") // never echo the DSN
	}
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg) // connects lazily
	if err != nil {
		return nil, fmt.Errorf("usage postgres: %w", err)
	}
	m := usage.NewMeter(maxCells)
	return &usageSink{meter: m, pool: pool, flusher: usage.NewFlusher(m, pool, interval, logger)}, nil
}

// add counts one request (or one socket operation) of keyID, whose
// organization org names if the meter needs it.
func (u *usageSink) add(keyID string, org usage.OrgSource, at time.Time, d usage.Delta) {
	u.meter.AddFrom(keyID, org, at, d)
}

// replacerOrg reads {civic.org} from a request's replacer, only when asked.
type replacerOrg caddy.Replacer

// orgTemplate reads the organization civic_auth publishes.
var orgTemplate = caddyopt.ParseTemplate("{" + contract.CivicOrg + "}")

// Org implements usage.OrgSource.
func (r *replacerOrg) Org() string {
	return orgTemplate.Expand((*caddy.Replacer)(r))
}

// fixedOrg is an organization already known (a socket's Charger).
type fixedOrg string

// Org implements usage.OrgSource.
func (o fixedOrg) Org() string { return string(o) }

// start starts the flusher once.
func (u *usageSink) start() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.started {
		u.started = true
		u.flusher.Start()
	}
}

// stop flushes what is left (10 s at most) and closes the pool.
func (u *usageSink) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u.mu.Lock()
	started := u.started
	u.mu.Unlock()
	var err error
	if started {
		err = u.flusher.Stop(ctx)
	} else {
		err = u.flusher.FlushNow(ctx)
	}
	u.pool.Close()
	return err
}
