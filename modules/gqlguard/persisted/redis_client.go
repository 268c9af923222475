package persisted

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"
)

// redisClients holds the live Redis clients by configuration, so a
// `caddy reload` with the same URL and options reuses the connection pool; the
// last release closes the client.
var redisClients = caddy.NewUsagePool()

// RedisOption adjusts a client made by RedisClient.
type RedisOption func(*redisClientConfig)

type redisClientConfig struct {
	username, password string
	timeout            time.Duration
}

// WithPassword sets the password, overriding one in the URL.
func WithPassword(password string) RedisOption {
	return func(c *redisClientConfig) { c.password = password }
}

// WithUsername sets the ACL user name, overriding one in the URL.
func WithUsername(username string) RedisOption {
	return func(c *redisClientConfig) { c.username = username }
}

// WithTimeout sets the dial, read and write timeouts (go-redis defaults
// otherwise); a request's context deadline applies as well.
func WithTimeout(d time.Duration) RedisOption {
	return func(c *redisClientConfig) { c.timeout = d }
}

// pooledRedis is a client in the usage pool; the pool closes it when its last
// user releases it.
type pooledRedis struct{ *redis.Client }

// Destruct closes the client.
func (p pooledRedis) Destruct() error { return p.Close() }

// RedisClient returns a client for a redis:// or rediss:// (TLS) URL (or
// unix://), shared with every other caller holding the same URL and options,
// and a release function to call once when done (e.g. in Cleanup). The
// password may be in the URL or given by WithPassword. Errors never repeat the
// URL's password.
func RedisClient(rawURL string, opts ...RedisOption) (redis.UniversalClient, func(), error) {
	var cfg redisClientConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.timeout < 0 {
		return nil, nil, fmt.Errorf("persisted: redis timeout %s is negative", cfg.timeout)
	}
	options, err := parseRedisURL(rawURL)
	if err != nil {
		return nil, nil, err
	}
	if cfg.username != "" {
		options.Username = cfg.username
	}
	if cfg.password != "" {
		options.Password = cfg.password
	}
	if cfg.timeout > 0 {
		options.DialTimeout, options.ReadTimeout, options.WriteTimeout = cfg.timeout, cfg.timeout, cfg.timeout
	}
	options.ContextTimeoutEnabled = true
	key := redisPoolKey(rawURL, cfg)
	val, _, err := redisClients.LoadOrNew(key, func() (caddy.Destructor, error) {
		return pooledRedis{redis.NewClient(options)}, nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("persisted: redis client: %w", err)
	}
	var once sync.Once
	release := func() {
		once.Do(func() { _, _ = redisClients.Delete(key) })
	}
	return val.(pooledRedis).Client, release, nil
}

// parseRedisURL parses the URL without ever echoing it: net/url's errors
// quote the whole URL, password included.
func parseRedisURL(rawURL string) (*redis.Options, error) {
	if rawURL == "" {
		return nil, errors.New("persisted: redis URL is empty")
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, errors.New("persisted: redis URL does not parse")
	}
	switch u.Scheme {
	case "redis", "rediss", "unix":
	default:
		return nil, fmt.Errorf("persisted: redis URL %s: scheme %q is not redis, rediss or unix", u.Redacted(), clip(u.Scheme))
	}
	options, err := redis.ParseURL(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return nil, fmt.Errorf("persisted: redis URL %s does not parse", u.Redacted())
		}
		// go-redis's own messages name the part at fault, not the password.
		return nil, fmt.Errorf("persisted: redis URL %s: %w", u.Redacted(), err)
	}
	return options, nil
}

// redisPoolKey identifies a configuration without holding its secrets in
// clear text.
func redisPoolKey(rawURL string, cfg redisClientConfig) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{rawURL, cfg.username, cfg.password, cfg.timeout.String()}, "\x00")))
	return "persisted-redis:" + hex.EncodeToString(sum[:])
}
