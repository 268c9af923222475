package testenv

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// RedisCluster is a private Redis Cluster of real redis-server processes on
// loopback: masters that split the 16384 slots evenly, each with its own
// replicas. cluster-node-timeout is 1 s, so a killed master is replaced by
// one of its replicas within a few seconds. Nothing is persisted; every
// process is killed when the test ends.
type RedisCluster struct {
	t       testing.TB
	masters int             // masters at start: the number of slot ranges
	nodes   []*redisProcess // masters first (in slot order at start), then replicas
	// CAFile, Username and Password are a TLS cluster's (StartRedisClusterTLS):
	// the test CA's certificate (PEM) and the ACL user's credentials; all
	// three are "" on a plain cluster.
	CAFile, Username, Password string
	sec                        *testTLS // nil: plain TCP, default user
}

// StartRedisCluster starts masters × (1 + replicasPerMaster) nodes, assigns
// the slots, joins them and waits until the cluster is healthy (WaitHealthy).
func StartRedisCluster(t testing.TB, masters, replicasPerMaster int) *RedisCluster {
	t.Helper()
	NeedsServices(t)
	return startRedisCluster(t, masters, replicasPerMaster, nil)
}

// StartRedisClusterTLS is StartRedisCluster on TLS only, like StartRedisTLS:
// every node serves a certificate of a test CA made for the cluster (CAFile)
// for 127.0.0.1 and localhost, on its one port, which is what the nodes
// announce; the cluster bus and replication are TLS too. The default user is
// off; clients log in as the ACL user (Username, Password: +@all
// -@dangerous), which Client and URL use.
func StartRedisClusterTLS(t testing.TB, masters, replicasPerMaster int) *RedisCluster {
	t.Helper()
	NeedsServices(t)
	return startRedisCluster(t, masters, replicasPerMaster, newTestTLS(t))
}

func startRedisCluster(t testing.TB, masters, replicasPerMaster int, sec *testTLS) *RedisCluster {
	t.Helper()
	if masters < 1 || replicasPerMaster < 0 {
		t.Fatalf("testenv: StartRedisCluster(%d, %d): need at least one master", masters, replicasPerMaster)
	}
	c := &RedisCluster{t: t, masters: masters, sec: sec}
	if sec != nil {
		c.CAFile, c.Username, c.Password = sec.caFile, sec.user, sec.password
	}
	buses := map[int]int{}
	for range masters * (1 + replicasPerMaster) {
		port, bus, dir := FreePort(t), FreePort(t), t.TempDir()
		conf := dataNodeConf(port, dir)
		if sec != nil {
			conf = dataNodeConf(0, dir) + sec.serverConf(port) + "tls-cluster yes\ntls-replication yes\n" +
				sec.userConf() + sec.adminConf()
		}
		conf += fmt.Sprintf("cluster-enabled yes\ncluster-config-file nodes.conf\n"+
			"cluster-port %d\ncluster-node-timeout 1000\ncluster-replica-validity-factor 0\n", bus)
		c.nodes = append(c.nodes, startRedisProcess(t, port, dir, conf))
		buses[port] = bus
	}
	for _, n := range c.nodes {
		waitRedisReady(t, n, sec.adminOptions())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ids := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		cl := c.nodeClient(n)
		id, err := cl.ClusterMyID(ctx).Result()
		if err == nil && i < masters {
			err = cl.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", i*clusterSlots/masters, (i+1)*clusterSlots/masters-1).Err()
		}
		if err == nil && i > 0 {
			err = cl.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", c.nodes[0].port, buses[c.nodes[0].port]).Err()
		}
		_ = cl.Close()
		if err != nil {
			t.Fatalf("testenv: set up cluster node %s: %v", n.addr, err)
		}
		ids[i] = id
	}
	waitFor(t, 60*time.Second, "every cluster node knows every other", func() (bool, string) {
		for _, n := range c.nodes {
			lines, err := c.clusterNodes(n)
			if err != nil {
				return false, err.Error()
			}
			if len(lines) != len(c.nodes) {
				return false, fmt.Sprintf("%s knows %d of %d nodes", n.addr, len(lines), len(c.nodes))
			}
			for _, l := range lines {
				if strings.Contains(l.flags, "handshake") || strings.Contains(l.flags, "noaddr") {
					return false, n.addr + " sees " + l.addr + " as " + l.flags
				}
			}
		}
		return true, ""
	})
	for i := masters; i < len(c.nodes); i++ {
		cl := c.nodeClient(c.nodes[i])
		err := cl.ClusterReplicate(ctx, ids[(i-masters)/replicasPerMaster]).Err()
		_ = cl.Close()
		if err != nil {
			t.Fatalf("testenv: make %s a replica: %v", c.nodes[i].addr, err)
		}
	}
	c.WaitHealthy(t)
	return c
}

// Addrs is every node's host:port, masters first.
func (c *RedisCluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.addr
	}
	return addrs
}

// URL is the cluster's URL in the form the gateway reads:
// redis://addr1?addr=addr2&...&mode=cluster; on a TLS cluster
// rediss://user:password@addr1?addr=…&mode=cluster&tls_ca_file=<CAFile>.
func (c *RedisCluster) URL() string {
	return c.sec.engineURL(c.Addrs(), url.Values{"mode": {"cluster"}})
}

// Client returns a cluster client on every node (on a TLS cluster: over TLS
// as the ACL user), closed when the test ends.
func (c *RedisCluster) Client() *redis.ClusterClient {
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), Username: c.Username, Password: c.Password,
		TLSConfig: c.sec.clientTLS()})
	c.t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// Masters is the address of the master serving each slot range, in slot
// order (index i serves the slots master i was given at start).
func (c *RedisCluster) Masters(t testing.TB) []string {
	t.Helper()
	for _, n := range c.nodes {
		if !n.running() {
			continue
		}
		cl := c.nodeClient(n)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		//lint:ignore SA1019 CLUSTER SLOTS names each range's serving master first, which is what is asked here
		slots, err := cl.ClusterSlots(ctx).Result()
		cancel()
		_ = cl.Close()
		if err != nil {
			continue
		}
		sort.Slice(slots, func(i, j int) bool { return slots[i].Start < slots[j].Start })
		masters := make([]string, 0, len(slots))
		for _, s := range slots {
			if len(s.Nodes) > 0 {
				masters = append(masters, s.Nodes[0].Addr)
			}
		}
		return masters
	}
	t.Fatal("testenv: no live cluster node answers CLUSTER SLOTS")
	return nil
}

// KillMaster kills (SIGKILL) the master currently serving slot range i and
// returns its address. One of its replicas takes over within a few seconds:
// WaitHealthy waits for that.
func (c *RedisCluster) KillMaster(t testing.TB, i int) string {
	t.Helper()
	masters := c.Masters(t)
	if i < 0 || i >= len(masters) {
		t.Fatalf("testenv: KillMaster(%d): the cluster has %d masters", i, len(masters))
	}
	for _, n := range c.nodes {
		if n.addr == masters[i] {
			n.kill()
			return n.addr
		}
	}
	t.Fatalf("testenv: master %s is not one of this cluster's nodes", masters[i])
	return ""
}

// RangeOf is the slot range (the i of KillMaster) that holds key's hash slot
// (its {hash tag}'s, when it has one).
func (c *RedisCluster) RangeOf(t testing.TB, key string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var live *redisProcess
	for _, n := range c.nodes {
		if n.running() {
			live = n
			break
		}
	}
	if live == nil {
		t.Fatal("testenv: no live cluster node")
	}
	cl := c.nodeClient(live)
	defer cl.Close()
	slot, err := cl.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatalf("testenv: CLUSTER KEYSLOT: %v", err)
	}
	for i := c.masters - 1; i >= 0; i-- {
		if slot >= int64(i*clusterSlots/c.masters) {
			return i
		}
	}
	return 0
}

// WaitHealthy waits (up to 60 s) until every live node reports
// cluster_state:ok with all 16384 slots ok, every slot range is served by a
// live master in every live node's view, every live node sees every other
// live node in the role it reports itself, and every replica of a live master
// has its replication link up.
func (c *RedisCluster) WaitHealthy(t testing.TB) {
	t.Helper()
	waitFor(t, 60*time.Second, "cluster healthy", c.healthy)
}

func (c *RedisCluster) healthy() (bool, string) {
	live := map[string]string{} // addr -> role as the node reports itself
	for _, n := range c.nodes {
		if !n.running() {
			continue
		}
		lines, err := c.clusterNodes(n)
		if err != nil {
			return false, err.Error()
		}
		for _, l := range lines {
			if strings.Contains(l.flags, "myself") {
				live[n.addr] = l.role()
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range c.nodes {
		if !n.running() {
			continue
		}
		cl := c.nodeClient(n)
		why := c.nodeHealthy(ctx, n, cl, live)
		_ = cl.Close()
		if why != "" {
			return false, why
		}
	}
	return true, ""
}

// nodeHealthy is one live node's part of healthy: "" or what is not yet so.
func (c *RedisCluster) nodeHealthy(ctx context.Context, n *redisProcess, cl *redis.Client, live map[string]string) string {
	info, err := cl.ClusterInfo(ctx).Result()
	if err != nil {
		return n.addr + ": " + err.Error()
	}
	if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
		f := strings.Fields(info)
		return n.addr + ": " + strings.Join(f[:min(4, len(f))], " ")
	}
	//lint:ignore SA1019 CLUSTER SLOTS names each range's serving master first, which is what is checked here
	slots, err := cl.ClusterSlots(ctx).Result()
	if err != nil {
		return n.addr + ": " + err.Error()
	}
	covered := 0
	for _, s := range slots {
		if len(s.Nodes) == 0 || live[s.Nodes[0].Addr] != "master" {
			return fmt.Sprintf("%s: slots %d-%d not served by a live master", n.addr, s.Start, s.End)
		}
		covered += int(s.End-s.Start) + 1
	}
	if covered != clusterSlots {
		return fmt.Sprintf("%s: %d slots covered", n.addr, covered)
	}
	lines, err := c.clusterNodes(n)
	if err != nil {
		return n.addr + ": " + err.Error()
	}
	for _, l := range lines {
		if role, ok := live[l.addr]; ok && (l.role() != role || strings.Contains(l.flags, "fail")) {
			return fmt.Sprintf("%s sees %s as %s, it is %s", n.addr, l.addr, l.flags, role)
		}
	}
	if live[n.addr] == "slave" {
		repl, err := cl.Info(ctx, "replication").Result()
		if err != nil {
			return n.addr + ": " + err.Error()
		}
		master := infoField(repl, "master_host") + ":" + infoField(repl, "master_port")
		if _, ok := live[master]; ok && infoField(repl, "master_link_status") != "up" {
			return n.addr + ": replication link to " + master + " not up"
		}
	}
	return ""
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct{ id, addr, flags string }

func (l clusterNode) role() string {
	if strings.Contains(l.flags, "slave") {
		return "slave"
	}
	return "master"
}

// clusterNodes is node n's CLUSTER NODES, parsed.
func (c *RedisCluster) clusterNodes(n *redisProcess) ([]clusterNode, error) {
	cl := c.nodeClient(n)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := cl.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER NODES on %s: %w", n.addr, err)
	}
	var lines []clusterNode
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@") // ip:port@cport[,hostname]
		lines = append(lines, clusterNode{id: f[0], addr: addr, flags: f[2]})
	}
	return lines, nil
}

// nodeClient is a client on one node (no cluster redirections), as the
// admin on a TLS cluster.
func (c *RedisCluster) nodeClient(n *redisProcess) *redis.Client {
	o := c.sec.adminOptions()
	o.Addr, o.MaxRetries, o.DialTimeout = n.addr, -1, time.Second
	return redis.NewClient(o)
}

// infoField is one field of an INFO section ("" when absent).
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}
