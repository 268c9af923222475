package gqlcache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/civicgate/civicgate/internal/redisconn"
)

// reporterComponent is the component label of this module's Redis errors
// (civicgate_redis_errors_total{component="gqlcache"}).
const reporterComponent = "gqlcache"

// sharedConfig is a validated `shared redis` block.
type sharedConfig struct {
	target  *redisconn.Target // standalone, Sentinel or Cluster; its Key holds no secret
	prefix  string
	timeout time.Duration
}

// sharedOptions validates `shared redis`: it needs the feed (a global order
// of changes to check shared entries against).
func (a *App) sharedOptions(lc *listenConfig) (*sharedConfig, error) {
	sh := a.Shared
	if sh == nil {
		return nil, nil
	}
	if lc == nil || lc.feed == "" {
		return nil, errors.New("graphql_cache: shared redis needs `invalidate postgres <dsn> { feed <table> }`: " +
			"without a change feed there is no global order to check shared entries against")
	}
	target, err := sh.Config.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("graphql_cache: shared %w", err) // redisconn never echoes a password
	}
	timeout := time.Duration(sh.Timeout)
	if timeout == 0 {
		timeout = defaultSharedTimeout
	}
	if timeout < 0 {
		return nil, fmt.Errorf("graphql_cache: shared timeout %s must be positive", timeout)
	}
	prefix := sh.KeyPrefix
	if prefix == "" {
		prefix = DefaultSharedPrefix
	}
	return &sharedConfig{target: target, prefix: prefix, timeout: timeout}, nil
}

// open returns a new client: one try per call, each step and the call
// bounded by the timeout (a failure is a miss).
func (sc *sharedConfig) open() redis.UniversalClient {
	return sc.target.Open(redisconn.Tuning{DialTimeout: sc.timeout, ReadTimeout: sc.timeout, WriteTimeout: sc.timeout,
		MaxRetries: -1, ContextTimeoutEnabled: true})
}

// openShared opens the shared tier and warms its client (connected, the
// cluster's slot map or the Sentinel master loaded), so that the first
// request behaves like the thousandth. A Redis that is not ready is logged
// and counted by rep, not fatal: its errors are misses until it is.
func openShared(sc *sharedConfig, rep *redisconn.Reporter) *shared {
	client := sc.open()
	_ = rep.Warm(context.Background(), client, sc.target)
	s := newShared(client, sc.prefix, sc.timeout)
	s.target = sc.target
	s.reporter.Store(rep)
	return s
}
