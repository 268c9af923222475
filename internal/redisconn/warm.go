package redisconn

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// WarmTimeout bounds Warm.
const WarmTimeout = 2 * time.Second

// warmRetry is the pause between two warm-up attempts.
const warmRetry = 50 * time.Millisecond

// Warm connects c and loads its topology, so that the first request does
// not pay for it: Cluster, the slot map and a PING on every shard (masters
// and replicas), the command table go-redis routes by, the scripts loaded
// on every master; Sentinel, the master
// resolved through the sentinels and a PING; standalone, a PING; then the
// scripts loaded (so the first EVALSHA does not miss). It retries until it
// succeeds or WarmTimeout (or ctx) ends — except after an auth or tls error,
// which retrying does not mend — and returns the most telling error seen
// (a timeout only if nothing else was).
func Warm(ctx context.Context, c redis.UniversalClient, scripts ...*redis.Script) error {
	ctx, cancel := context.WithTimeout(ctx, WarmTimeout)
	defer cancel()
	var telling error
	for {
		err := warmOnce(ctx, c, scripts)
		if err == nil {
			return nil
		}
		switch Cause(err) {
		case CauseAuth, CauseTLS:
			return err
		case CauseTimeout:
		default:
			telling = err
		}
		t := time.NewTimer(warmRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			if telling != nil {
				return telling
			}
			return err
		case <-t.C:
		}
	}
}

func warmOnce(ctx context.Context, c redis.UniversalClient, scripts []*redis.Script) error {
	if cl, ok := c.(*redis.ClusterClient); ok {
		if err := cl.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
			if err := n.Ping(ctx).Err(); err != nil {
				return fmt.Errorf("redis warm-up: ping %s: %w", n.Options().Addr, err)
			}
			return nil
		}); err != nil {
			return err
		}
		// a command through the cluster's routing loads its command table
		// (COMMAND), which the first routed command would otherwise fetch
		if err := cl.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("redis warm-up: ping: %w", err)
		}
		return cl.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			return loadScripts(ctx, n, scripts)
		})
	}
	if err := c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis warm-up: ping: %w", err)
	}
	return loadScripts(ctx, c, scripts)
}

func loadScripts(ctx context.Context, c redis.Scripter, scripts []*redis.Script) error {
	for _, s := range scripts {
		if err := s.Load(ctx, c).Err(); err != nil {
			return fmt.Errorf("redis warm-up: script load: %w", err)
		}
	}
	return nil
}

// Warm warms c (Warm) and logs the outcome: at info when connected, at warn
// with the cause (and counted) when not — not fatal: the module's
// on_store_error mode handles an outage, and go-redis keeps trying on use.
func (r *Reporter) Warm(ctx context.Context, c redis.UniversalClient, t *Target, scripts ...*redis.Script) error {
	start := r.now()
	err := t.Warm(ctx, c, scripts...)
	if err != nil {
		cause := Cause(err)
		r.counters[cause].Inc()
		r.log.Warn("redis not ready at provision; requests use it as soon as it is",
			zap.String("component", r.component), zap.String("redis", t.String()), zap.String("cause", cause),
			zap.Duration("waited", r.now().Sub(start)), zap.Error(err))
		return err
	}
	r.log.Info("redis connected", zap.String("component", r.component), zap.String("redis", t.String()),
		zap.Duration("took", r.now().Sub(start)))
	return nil
}
