package ratelimit

import (
	"context"
	"fmt"
	"net/http"
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
	// Operations counts each key's GraphQL operations per hour and document
	// hash (docs/design.md D70); nil means on.
	Operations *bool `json:"operations,omitempty"`
	// Bound on (key, hour, operation) cells held between flushes
	// (default usage.DefaultMaxOperationCells).
	MaxOperations int `json:"max_operations,omitempty"`
	// Bound on one key's distinct operations per hour; beyond it they are
	// counted under "other" (default usage.DefaultMaxOperationsPerKey).
	MaxOperationsPerKey int `json:"max_operations_per_key,omitempty"`
}

// usageSettings are a usage block's values, checked and defaulted.
type usageSettings struct {
	dsn                string // "" = usage off
	interval           time.Duration
	cells              int
	operations         bool
	opCells, opsPerKey int
}

// usageSink is the limiter's usage counting: the meter every request adds
// to and the flusher that writes it. It lives with the limiter in the usage
// pool, so counts survive a reload; the flusher runs from the first App
// Start to the limiter's Destruct (a last flush).
type usageSink struct {
	meter *usage.Meter
	ops   *usage.OperationMeter // nil: operations not counted
	// crossings holds the quota thresholds reached (docs/design.md D81)
	crossings *usage.CrossingMeter
	pool      *pgxpool.Pool
	flusher   *usage.Flusher
	mu        sync.Mutex
	started   bool
}

func newUsageSink(set usageSettings, logger *zap.Logger) (*usageSink, error) {
	cfg, err := pgxpool.ParseConfig(set.dsn)
	if err != nil {
		return nil, fmt.Errorf("usage postgres DSN does not parse") // never echo the DSN
	}
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg) // connects lazily
	if err != nil {
		return nil, fmt.Errorf("usage postgres: %w", err)
	}
	m := usage.NewMeter(set.cells)
	u := &usageSink{meter: m, pool: pool, flusher: usage.NewFlusher(m, pool, set.interval, logger),
		crossings: usage.NewCrossingMeter(0)}
	u.flusher.WithCrossings(u.crossings)
	if set.operations {
		u.ops = usage.NewOperationMeter(set.opCells, set.opsPerKey)
		u.flusher.WithOperations(u.ops)
	}
	return u, nil
}

// add counts one request (or one socket operation) of keyID, whose
// organization org names if the meter needs it.
func (u *usageSink) add(keyID string, org usage.OrgSource, at time.Time, d usage.Delta) {
	u.meter.AddFrom(keyID, org, at, d)
}

// addOperation counts the GraphQL operation the guard admitted for r, if it
// published one (docs/design.md D70): its hash, type and name, whether the
// answer's HTTP status was an error (or the stream the upstream ended with
// an error, D83), its cost and how long the handler
// chain took. Variables and credentials are not read.
func (u *usageSink) addOperation(r *http.Request, keyID string, org usage.OrgSource, at time.Time, d usage.Delta, took time.Duration) {
	q, ok := contract.RequestFrom(r.Context())
	if !ok {
		return
	}
	g, ok := q.GraphQL()
	if !ok {
		return
	}
	s := usage.OperationSample{KeyID: keyID, Org: org, At: at, Operation: &g.Operation,
		Error: d.ClientErrors+d.ServerErrors > 0 || q.OperationFailed(), Cost: d.Cost, Latency: took}
	u.ops.Add(&s)
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
