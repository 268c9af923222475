package gqlcache

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/civicgate/civicgate/internal/redisconn"
)

// reloadTopology has a Cluster client reload its slot map after a failed
// call that may mean the map is stale: a node that refuses or does not
// answer (a killed master whose replica took over), a cluster down or
// read-only reply. go-redis reloads on its own only on MOVED/ASK (which a
// dead node never sends) or every ClusterStateReloadInterval (60 s by
// default): without this, the slots of a failed-over master stay misses for
// up to a minute (TestSharedOnEngines/cluster_failover). The reload is
// asynchronous, deduplicated and spaced by go-redis (at most one at a time,
// 200 ms apart). Credentials and TLS errors do not move slots: no reload.
func reloadTopology(c redis.UniversalClient, err error) {
	cc, ok := c.(*redis.ClusterClient)
	if !ok || err == nil {
		return
	}
	switch redisconn.Cause(err) {
	case redisconn.CauseAuth, redisconn.CauseTLS, redisconn.CauseLoading:
		return
	}
	cc.ReloadState(context.Background())
}
