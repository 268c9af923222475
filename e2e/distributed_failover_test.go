package e2e

import (
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestNoServerErrorsThroughSentinelFailover: a gateway on a Redis master with
// a replica and three sentinels (REDIS_URL names the sentinels and the
// master), under load from two clients, while the master is killed and the
// sentinels promote the replica. With on_store_error local (as shipped) every
// answer before, during and after the failover is 200 or 429 with
// Retry-After, requests are answered while Redis has no master, and within
// 15 s of the replica's promotion the gateway decides in Redis again (its
// Redis calls succeed and its store errors stop growing): a gateway that
// kept deciding alone would let each gateway admit a whole quota.
func TestNoServerErrorsThroughSentinelFailover(t *testing.T) {
	t.Parallel()
	sentinel := testenv.StartRedisSentinel(t)
	gateways := startGateways(t, 1, sentinel.URL())
	keys, _ := issueKeys(t, gateways[0], "sentinelco", 6)
	checkServesThrough(t, gateways, keys, "sentinel failover", func() { sentinel.Failover(t) })
}

// TestNoServerErrorsThroughClusterMasterKill: the same with a gateway on a
// Redis Cluster of three masters with a replica each, the master that holds
// the load's keys killed (SIGKILL) under load and replaced by its replica
// (cluster-node-timeout 1 s). The gateway's cluster client must learn the
// new slot map within the 15 s (go-redis reloads it on its own only every
// ClusterStateReloadInterval, 60 s by default, and a refused dial within
// the 50 ms deadline does not trigger a reload). Of nine keys, the load
// uses those whose hash slot (the key id is the rate limiter's hash tag,
// docs/design.md D26) lies in the slot range that holds most of them: at
// least three.
func TestNoServerErrorsThroughClusterMasterKill(t *testing.T) {
	t.Parallel()
	cluster := testenv.StartRedisCluster(t, 3, 1)
	gateways := startGateways(t, 1, cluster.URL())
	keys, ids := issueKeys(t, gateways[0], "clusterkillco", 9)
	byRange := map[int][]string{}
	for i, id := range ids {
		r := cluster.RangeOf(t, "{"+id+"}")
		byRange[r] = append(byRange[r], keys[i])
	}
	target := 0
	for r, ks := range byRange {
		if len(ks) > len(byRange[target]) {
			target = r
		}
	}
	checkServesThrough(t, gateways, byRange[target], "cluster master kill", func() {
		cluster.KillMaster(t, target)
		cluster.WaitHealthy(t)
	})
}

// checkServesThrough runs a load with keys through the gateways, waits until
// Redis decides (shared counting), runs outage (which returns once Redis has
// recovered), waits (15 s at most) until Redis decides again and checks that
// requests were answered during the outage; the load's end checks every
// answer.
func checkServesThrough(t *testing.T, gateways []*stack.Stack, keys []string, what string, outage func()) {
	t.Helper()
	l := startLoad(gateways, keys)
	defer l.end(t)
	awaitSharedCounting(t, gateways, l, 60*time.Second)
	errorsBefore := storeErrors(t, gateways)
	began := time.Now()
	outage()
	recovered := time.Now()
	during := l.between(began, recovered)
	awaitSharedCounting(t, gateways, l, 15*time.Second)
	l.awaitAnswers(t, 100)
	t.Logf("%s: Redis back after %s; %d answers during it, %d in all; %d store errors (decided locally)",
		what, recovered.Sub(began).Round(time.Millisecond), during, l.answered(), storeErrors(t, gateways)-errorsBefore)
	if during == 0 {
		t.Errorf("no request answered during the %s (%s)", what, recovered.Sub(began).Round(time.Millisecond))
	}
}
