package testenv

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// sentinelMasterName is the name the sentinels monitor the master under.
const sentinelMasterName = "civicgate"

// RedisSentinel is a private Redis master with one replica, watched by three
// sentinels (quorum 2) that fail over after one second without an answer.
// Nothing is persisted; every process is killed when the test ends.
type RedisSentinel struct {
	t         testing.TB
	data      []*redisProcess // the master at start, then the replica
	sentinels []*redisProcess
	// CAFile, Username and Password are a TLS engine's
	// (StartRedisSentinelTLS): the test CA's certificate (PEM) and the
	// master's ACL user's credentials; all three are "" on a plain one.
	CAFile, Username, Password string
	sec                        *testTLS // nil: plain TCP, default user
}

// StartRedisSentinel starts the master, its replica and the three sentinels
// and waits until every sentinel sees the replica and the two other sentinels.
func StartRedisSentinel(t testing.TB) *RedisSentinel {
	t.Helper()
	NeedsServices(t)
	return startRedisSentinel(t, nil)
}

// StartRedisSentinelTLS is StartRedisSentinel on TLS only, like
// StartRedisTLS: the master, the replica and the sentinels serve a
// certificate of a test CA made for them (CAFile) for 127.0.0.1 and
// localhost on their one port; replication and the sentinels' links are TLS
// too. On the master and replica the default user is off; clients log in as
// the ACL user (Username, Password: +@all -@dangerous), the sentinels as an
// admin user (sentinel auth-user, auth-pass). The sentinels themselves take
// no password. Client and URL use TLS and the ACL user.
func StartRedisSentinelTLS(t testing.TB) *RedisSentinel {
	t.Helper()
	NeedsServices(t)
	return startRedisSentinel(t, newTestTLS(t))
}

func startRedisSentinel(t testing.TB, sec *testTLS) *RedisSentinel {
	t.Helper()
	s := &RedisSentinel{t: t, sec: sec}
	if sec != nil {
		s.CAFile, s.Username, s.Password = sec.caFile, sec.user, sec.password
	}
	for i := range 2 {
		port, dir := FreePort(t), t.TempDir()
		conf := dataNodeConf(port, dir)
		if sec != nil {
			conf = dataNodeConf(0, dir) + sec.serverConf(port) + "tls-replication yes\n" + sec.userConf() + sec.adminConf()
		}
		if i > 0 {
			conf += fmt.Sprintf("replicaof 127.0.0.1 %d\n", s.data[0].port)
		}
		s.data = append(s.data, startRedisProcess(t, port, dir, conf))
		waitRedisReady(t, s.data[i], sec.adminOptions())
	}
	// The sentinels find the replica in the master's INFO, which they read on
	// connecting and then every 10 s: start them once the replica is linked.
	replica := s.dataClient(s.data[1])
	defer replica.Close()
	waitFor(t, 30*time.Second, "replica linked to its master", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		info, err := replica.Info(ctx, "replication").Result()
		if err != nil {
			return false, err.Error()
		}
		return infoField(info, "master_link_status") == "up", info
	})
	for range 3 {
		port, dir := FreePort(t), t.TempDir()
		conf := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %q\ndaemonize no\n", port, dir)
		if sec != nil {
			conf = fmt.Sprintf("port 0\nbind 127.0.0.1\ndir %q\ndaemonize no\n", dir) + sec.serverConf(port) +
				"tls-replication yes\n"
		}
		conf += fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 2\n", sentinelMasterName, s.data[0].port) +
			"sentinel down-after-milliseconds " + sentinelMasterName + " 1000\n" +
			"sentinel failover-timeout " + sentinelMasterName + " 5000\n" +
			"sentinel parallel-syncs " + sentinelMasterName + " 1\n"
		if sec != nil {
			conf += fmt.Sprintf("sentinel auth-user %s %s\nsentinel auth-pass %s %s\n",
				sentinelMasterName, sec.admin, sentinelMasterName, sec.adminPassword)
		}
		p := startRedisProcess(t, port, dir, conf, "--sentinel")
		waitRedisReady(t, p, &redis.Options{TLSConfig: sec.clientTLS()})
		s.sentinels = append(s.sentinels, p)
	}
	waitFor(t, 60*time.Second, "sentinels see the replica and each other", func() (bool, string) {
		for _, p := range s.sentinels {
			m, err := s.sentinelMaster(p)
			if err != nil {
				return false, err.Error()
			}
			if m["flags"] != "master" || m["num-slaves"] != "1" || m["num-other-sentinels"] != "2" {
				return false, fmt.Sprintf("sentinel %s: flags %s, %s replicas, %s other sentinels",
					p.addr, m["flags"], m["num-slaves"], m["num-other-sentinels"])
			}
		}
		return true, ""
	})
	return s
}

// URL is the URL the gateway reads: redis://s1?addr=s2&addr=s3&master_name=<name>;
// on a TLS engine rediss://user:password@s1?addr=…&master_name=<name>&tls_ca_file=<CAFile>
// (the credentials are the master's ACL user's).
func (s *RedisSentinel) URL() string {
	return s.sec.engineURL(s.SentinelAddrs(), url.Values{"master_name": {sentinelMasterName}})
}

// MasterName is the name the sentinels monitor the master under.
func (s *RedisSentinel) MasterName() string { return sentinelMasterName }

// SentinelAddrs is the three sentinels' host:port.
func (s *RedisSentinel) SentinelAddrs() []string {
	addrs := make([]string, len(s.sentinels))
	for i, p := range s.sentinels {
		addrs[i] = p.addr
	}
	return addrs
}

// DataAddrs is the host:port of the master and replica started (the first
// was the master at start).
func (s *RedisSentinel) DataAddrs() []string {
	return []string{s.data[0].addr, s.data[1].addr}
}

// Client returns a failover client (through the sentinels; on a TLS engine
// over TLS to the sentinels and the master, as the ACL user), closed when
// the test ends.
func (s *RedisSentinel) Client() *redis.Client {
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: sentinelMasterName, SentinelAddrs: s.SentinelAddrs(),
		Username: s.Username, Password: s.Password, TLSConfig: s.sec.clientTLS()})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// MasterAddr is the master's host:port as the first live sentinel reports it.
func (s *RedisSentinel) MasterAddr(t testing.TB) string {
	t.Helper()
	var last error
	for _, p := range s.sentinels {
		addr, err := s.sentinelMasterAddr(p)
		if err == nil {
			return addr
		}
		last = err
	}
	t.Fatalf("testenv: no sentinel names the master: %v", last)
	return ""
}

// Failover kills (SIGKILL) the master and waits until every sentinel names
// the replica as the new master and it accepts writes. It returns the new
// master's address. The wait is bounded at 3 minutes: on a quiet machine the
// sentinels agree within seconds, but on a loaded one a failover attempt can
// time out (failover-timeout 5 s) and the next may start only 10 s later, so
// a tight bound fails a test for the machine's load, not for a defect; the
// failure message carries each sentinel's view of the failover.
func (s *RedisSentinel) Failover(t testing.TB) string {
	t.Helper()
	old := s.MasterAddr(t)
	var next *redisProcess
	for _, p := range s.data {
		if p.addr == old {
			p.kill()
		} else if p.running() {
			next = p
		}
	}
	if next == nil {
		t.Fatalf("testenv: no live replica to fail over to from %s", old)
	}
	c := s.dataClient(next)
	defer c.Close()
	waitFor(t, 3*time.Minute, "sentinels promote "+next.addr, func() (bool, string) {
		for _, p := range s.sentinels {
			addr, err := s.sentinelMasterAddr(p)
			if err != nil {
				return false, err.Error()
			}
			if addr != next.addr {
				why := fmt.Sprintf("sentinel %s names %s", p.addr, addr)
				if m, err := s.sentinelMaster(p); err == nil {
					why += fmt.Sprintf(" (flags %s, failover-state %s, %s other sentinels)",
						m["flags"], m["failover-state"], m["num-other-sentinels"])
				}
				return false, why
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.Set(ctx, "testenv:failover", old, 0).Err(); err != nil {
			return false, "write on " + next.addr + ": " + err.Error()
		}
		return true, ""
	})
	return next.addr
}

func (s *RedisSentinel) sentinelMasterAddr(p *redisProcess) (string, error) {
	sc := redis.NewSentinelClient(&redis.Options{Addr: p.addr, MaxRetries: -1, TLSConfig: s.sec.clientTLS()})
	defer sc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hp, err := sc.GetMasterAddrByName(ctx, sentinelMasterName).Result()
	if err != nil {
		return "", fmt.Errorf("sentinel %s: %w", p.addr, err)
	}
	if len(hp) != 2 {
		return "", fmt.Errorf("sentinel %s: master address %q", p.addr, hp)
	}
	if _, err := strconv.Atoi(hp[1]); err != nil {
		return "", fmt.Errorf("sentinel %s: master port %q: %w", p.addr, hp[1], err)
	}
	return hp[0] + ":" + hp[1], nil
}

func (s *RedisSentinel) sentinelMaster(p *redisProcess) (map[string]string, error) {
	sc := redis.NewSentinelClient(&redis.Options{Addr: p.addr, MaxRetries: -1, TLSConfig: s.sec.clientTLS()})
	defer sc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := sc.Master(ctx, sentinelMasterName).Result()
	if err != nil {
		return nil, fmt.Errorf("sentinel %s: %w", p.addr, err)
	}
	return m, nil
}

// dataClient is a client on the master or replica p (as the admin on a TLS
// engine), without retries.
func (s *RedisSentinel) dataClient(p *redisProcess) *redis.Client {
	o := s.sec.adminOptions()
	o.Addr, o.MaxRetries = p.addr, -1
	return redis.NewClient(o)
}
