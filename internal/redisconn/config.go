// Package redisconn is the one way civicgate modules connect to Redis
// (civic_rate_limit, the graphql_guard persisted-query store, the
// graphql_cache shared tier): a Config every module embeds in its JSON and
// reads from its Caddyfile (caddyfile.go), resolved into a Target — the
// mode (standalone, Sentinel or Cluster), addresses, ACL credentials and TLS
// (url.go, tls.go) — that opens a go-redis client (open.go), warmed at
// provision so that the first request behaves like the thousandth
// (warm.go), and a Reporter that counts and logs every store error with
// its cause (reporter.go, cause.go). docs/redis.md is the operator's guide.
package redisconn

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/caddyserver/caddy/v2"
)

// Modes of a connection (Config.Mode, the URL's mode=).
const (
	ModeStandalone = "standalone"
	ModeCluster    = "cluster"
	ModeSentinel   = "sentinel"
)

// Config is a Redis connection as configured: a URL, the block form's
// fields, or both (the fields then add to or override the URL's). Embed it
// inline (anonymously) in a module's JSON config, so that "redis" is the URL
// as before and the other fields sit beside it:
//
//	{"redis": "{env.REDIS_URL}"}
//	{"addrs": ["10.0.0.1:6379", "10.0.0.2:6379"], "mode": "cluster", "tls": {"ca": "/etc/redis/ca.pem"}}
//
// Values may hold placeholders ({env.REDIS_PASSWORD}); Resolve replaces them.
type Config struct {
	// URL: redis://, rediss:// or unix:// (docs/redis.md "URL forms"), usually {env.REDIS_URL}.
	URL string `json:"redis,omitempty"`
	// Addrs are more host:port addresses (after the URL's): cluster nodes,
	// or the sentinels with master_name.
	Addrs []string `json:"addrs,omitempty"`
	// Mode is standalone, cluster or sentinel; empty: sentinel with a
	// master_name, cluster with more than one address, else standalone.
	Mode string `json:"mode,omitempty"`
	// MasterName is the Sentinel master's name.
	MasterName string `json:"master_name,omitempty"`
	// Username and Password authenticate to Redis (ACL user; Sentinel: to
	// the master and replicas).
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	// SentinelUsername and SentinelPassword authenticate to the sentinels.
	SentinelUsername string `json:"sentinel_username,omitempty"`
	SentinelPassword string `json:"sentinel_password,omitempty"`
	// DB is the database number (standalone and Sentinel; Cluster has only 0).
	DB *int `json:"db,omitempty"`
	// TLS turns TLS on (also rediss:// or any tls_* URL option does).
	TLS *TLS `json:"tls,omitempty"`
}

// TLS is the tls block: a custom CA, a client certificate, the server name
// to verify (default: each node's host).
type TLS struct {
	CA         string `json:"ca,omitempty"`
	Cert       string `json:"cert,omitempty"`
	Key        string `json:"key,omitempty"`
	ServerName string `json:"server_name,omitempty"`
	// InsecureSkipVerify: tests only (also the URL's skip_verify=true).
	InsecureSkipVerify bool `json:"insecure_skip_verify,omitempty"`
}

// IsZero reports whether nothing of a connection is configured (the module
// then keeps its state in memory). A password alone is not nothing: Resolve
// refuses it ("no URL and no addrs") rather than silently using memory.
func (c *Config) IsZero() bool {
	return c.URL == "" && len(c.Addrs) == 0 && c.MasterName == "" && c.Mode == "" && c.Username == "" &&
		c.Password == "" && c.SentinelUsername == "" && c.SentinelPassword == "" && c.DB == nil && c.TLS == nil
}

// Resolve replaces the placeholders of every value with repl (nil: a new
// caddy.Replacer, which knows {env.*}) and resolves the result into a
// Target. Its errors never hold a password or a URL's credentials.
func (c *Config) Resolve(repl *caddy.Replacer) (*Target, error) {
	if repl == nil {
		repl = caddy.NewReplacer()
	}
	r := c.replaced(repl)
	if c.URL != "" && r.URL == "" {
		// c.URL is a template here (a literal is never empty): safe to show
		return nil, fmt.Errorf("redis %q resolved to an empty URL", c.URL)
	}
	for i, a := range r.Addrs {
		if a == "" {
			return nil, fmt.Errorf("redis addrs: %q resolved to an empty address", c.Addrs[i])
		}
	}
	if r.URL == "" && len(r.Addrs) == 0 {
		return nil, errors.New("redis: no URL and no addrs")
	}
	return resolve(&r)
}

// replaced is c with every value's placeholders replaced.
func (c *Config) replaced(repl *caddy.Replacer) Config {
	s := func(v string) string { return repl.ReplaceKnown(v, "") }
	r := Config{URL: s(c.URL), Mode: s(c.Mode), MasterName: s(c.MasterName), Username: s(c.Username),
		Password: s(c.Password), SentinelUsername: s(c.SentinelUsername), SentinelPassword: s(c.SentinelPassword), DB: c.DB}
	for _, a := range c.Addrs {
		r.Addrs = append(r.Addrs, s(a))
	}
	if c.TLS != nil {
		r.TLS = &TLS{CA: s(c.TLS.CA), Cert: s(c.TLS.Cert), Key: s(c.TLS.Key), ServerName: s(c.TLS.ServerName),
			InsecureSkipVerify: c.TLS.InsecureSkipVerify}
	}
	return r
}

// checkMode validates an explicit mode.
func checkMode(m string) error {
	switch m {
	case "", ModeStandalone, ModeCluster, ModeSentinel:
		return nil
	}
	return fmt.Errorf("want mode standalone, cluster or sentinel, got %q", m)
}

// parseDB reads a database number.
func parseDB(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("want a database number ≥ 0, got %q", v)
	}
	return n, nil
}
