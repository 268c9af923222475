package redisconn

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Target is a resolved connection: what Open connects to. Its String and
// Key never hold a password.
type Target struct {
	mode, master string
	addrs        []string
	user         string
	db           int
	tls          *TLS
	key          string
	standalone   *redis.Options
	cluster      *redis.ClusterOptions
	failover     *redis.FailoverOptions
	lastDial     atomic.Pointer[dialFailure] // dialrecord.go
}

// Mode is standalone, cluster or sentinel.
func (t *Target) Mode() string { return t.mode }

// Addrs are the addresses dialed first: the node, the cluster's seed nodes,
// or the sentinels (none for a unix socket).
func (t *Target) Addrs() []string { return t.addrs }

// String describes the target for logs, without secrets: "cluster
// 10.0.0.1:6379,10.0.0.2:6379 tls user=gateway".
func (t *Target) String() string {
	var b strings.Builder
	b.WriteString(t.mode)
	if t.master != "" {
		b.WriteString(" master=" + t.master)
	}
	if len(t.addrs) > 0 {
		b.WriteString(" " + strings.Join(t.addrs, ","))
	} else if t.standalone != nil {
		b.WriteString(" unix:" + t.standalone.Addr)
	}
	if t.db != 0 {
		fmt.Fprintf(&b, " db=%d", t.db)
	}
	if t.tls != nil {
		b.WriteString(" tls")
	}
	if t.user != "" {
		b.WriteString(" user=" + t.user)
	}
	return b.String()
}

// Key identifies the connection for a caddy.UsagePool: two configurations
// with the same key may share one client. It is the String plus a keyed
// hash of everything else (passwords, TLS files, go-redis options), the
// hash key drawn at random per process: a key that reaches a log reveals no
// password, not even to a dictionary.
func (t *Target) Key() string { return t.key }

// poolKeySecret keys the pool keys' hash (drawn once per process, never
// changed).
var poolKeySecret = func() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}()

func (p *urlParts) poolKey(t *Target) string {
	h := hmac.New(sha256.New, poolKeySecret)
	for _, s := range []string{p.mode, p.master, strings.Join(p.addrs, ","), p.user, p.password, p.sentinelUser,
		p.sentinelPassword, fmt.Sprint(t.db), p.query.Encode(), fmt.Sprintf("%+v", p.tls), t.unixPath()} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return t.String() + " #" + hex.EncodeToString(h.Sum(nil)[:12])
}

func (t *Target) unixPath() string {
	if t.standalone != nil && t.standalone.Network == "unix" {
		return t.standalone.Addr
	}
	return ""
}

// Tuning is what a module sets on every client it opens, over the URL's
// options and go-redis' defaults (zero fields: left as they are).
type Tuning struct {
	// DialTimeout, ReadTimeout, WriteTimeout bound each step of a call.
	DialTimeout, ReadTimeout, WriteTimeout time.Duration
	// MaxRetries: -1 for one try per command (a module with a breaker).
	MaxRetries int
	// DialerRetries is the dial attempts per new connection (go-redis: 5,
	// 100 ms apart); 1 for a module whose calls have a short deadline.
	DialerRetries int
	// ContextTimeoutEnabled makes go-redis honour the context's deadline.
	ContextTimeoutEnabled bool
	// PoolSize is the connections per node.
	PoolSize int
}

// Open returns a new client for t, tuned: a *redis.Client (standalone, or
// Sentinel's failover client, which finds the master through the sentinels)
// or a *redis.ClusterClient. It does not connect: call Warm. go-redis' own
// log lines go to Caddy's log from then on (gologger.go).
func (t *Target) Open(tune Tuning) redis.UniversalClient {
	routeGoRedisLog()
	set := func(dst *time.Duration, v time.Duration) {
		if v != 0 {
			*dst = v
		}
	}
	seti := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	switch {
	case t.cluster != nil:
		o := *t.cluster
		set(&o.DialTimeout, tune.DialTimeout)
		set(&o.ReadTimeout, tune.ReadTimeout)
		set(&o.WriteTimeout, tune.WriteTimeout)
		seti(&o.MaxRetries, tune.MaxRetries)
		seti(&o.DialerRetries, tune.DialerRetries)
		seti(&o.PoolSize, tune.PoolSize)
		o.ContextTimeoutEnabled = o.ContextTimeoutEnabled || tune.ContextTimeoutEnabled
		if o.Dialer == nil {
			o.Dialer = t.dialer(dialTimeout(o.DialTimeout), o.TLSConfig)
		}
		// go-redis refreshes its slot map only every 60 s by default, and a
		// refused connection to a killed master does not trigger a refresh
		// within a decision's deadline: a gateway would decide alone for up
		// to a minute after the cluster has failed over. Lazily, at most once
		// a second while traffic flows (one CLUSTER SLOTS per second per
		// gateway), it follows the failover within about a second
		// (e2e TestNoServerErrorsThroughClusterMasterKill).
		if o.ClusterStateReloadInterval == 0 {
			o.ClusterStateReloadInterval = time.Second
		}
		return redis.NewClusterClient(&o)
	case t.failover != nil:
		o := *t.failover
		set(&o.DialTimeout, tune.DialTimeout)
		set(&o.ReadTimeout, tune.ReadTimeout)
		set(&o.WriteTimeout, tune.WriteTimeout)
		seti(&o.MaxRetries, tune.MaxRetries)
		seti(&o.DialerRetries, tune.DialerRetries)
		seti(&o.PoolSize, tune.PoolSize)
		o.ContextTimeoutEnabled = o.ContextTimeoutEnabled || tune.ContextTimeoutEnabled
		if o.Dialer == nil {
			o.Dialer = t.dialer(dialTimeout(o.DialTimeout), o.TLSConfig)
		}
		return redis.NewFailoverClient(&o)
	default:
		o := *t.standalone
		set(&o.DialTimeout, tune.DialTimeout)
		set(&o.ReadTimeout, tune.ReadTimeout)
		set(&o.WriteTimeout, tune.WriteTimeout)
		seti(&o.MaxRetries, tune.MaxRetries)
		seti(&o.DialerRetries, tune.DialerRetries)
		seti(&o.PoolSize, tune.PoolSize)
		o.ContextTimeoutEnabled = o.ContextTimeoutEnabled || tune.ContextTimeoutEnabled
		if o.Dialer == nil {
			o.Dialer = t.dialer(dialTimeout(o.DialTimeout), o.TLSConfig)
		}
		return redis.NewClient(&o)
	}
}

// dialTimeout is go-redis' default when none is set.
func dialTimeout(d time.Duration) time.Duration {
	if d == 0 {
		return 5 * time.Second
	}
	return d
}
