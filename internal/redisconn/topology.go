package redisconn

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// ReloadTopology has a Cluster client reload its slot map after a failed
// call that may mean the map is stale: a node that refuses or does not
// answer (a killed master whose replica took over), a CLUSTERDOWN or
// READONLY reply. go-redis reloads on its own only on MOVED/ASK, which a dead
// node never sends, or every ClusterStateReloadInterval (Open sets 1 s while
// traffic flows); this makes the next call after a failure already use the
// new map. The reload is asynchronous, deduplicated and spaced by go-redis.
// Credential, TLS and loading errors do not move slots: no reload. Any other
// client, or a nil error, is left alone.
func ReloadTopology(c redis.UniversalClient, err error) {
	cc, ok := c.(*redis.ClusterClient)
	if !ok || err == nil {
		return
	}
	switch Cause(err) {
	case CauseAuth, CauseTLS, CauseLoading:
		return
	}
	cc.ReloadState(context.Background())
}
