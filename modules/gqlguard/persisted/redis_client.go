package persisted

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/redisconn"
)

// ReporterComponent is the component label of the store's Redis errors
// (civicgate_redis_errors_total{component="persisted"}): the Reporter given
// to WithReporter is made with it.
const ReporterComponent = "persisted"

// redisClients holds the live Redis clients by configuration, so a
// `caddy reload` with the same connection and options reuses the connection
// pool; the last release closes the client.
var redisClients = caddy.NewUsagePool()

// RedisOption adjusts a client made by RedisClient.
type RedisOption func(*redisClientConfig)

type redisClientConfig struct {
	username, password string
	timeout            time.Duration
	reporter           *redisconn.Reporter
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

// WithReporter counts and logs every failed Redis call of the client
// through r (a redisconn.Reporter for ReporterComponent, made in the
// caller's Provision with its metrics registry and logger), and the outcome
// of the warm-up when the client is first opened. The client reports
// through the latest Reporter given for its configuration (a reload's).
func WithReporter(r *redisconn.Reporter) RedisOption {
	return func(c *redisClientConfig) { c.reporter = r }
}

// pooledRedis is a client in the usage pool; the pool closes it when its
// last user releases it.
type pooledRedis struct {
	client   redis.UniversalClient
	reporter atomic.Pointer[redisconn.Reporter]
}

// Destruct closes the client.
func (p *pooledRedis) Destruct() error { return p.client.Close() }

// RedisClient returns a client for a Redis URL — redis://, rediss:// (TLS),
// unix://, a Cluster (several addr= or mode=cluster) or Sentinel
// (master_name=) as docs/redis.md describes — shared with every other caller
// holding the same connection and options, warmed (connected, its topology
// loaded) when first opened, and a release function to call once when done
// (e.g. in Cleanup). Errors never repeat the URL's password.
func RedisClient(rawURL string, opts ...RedisOption) (redis.UniversalClient, func(), error) {
	if rawURL == "" {
		return nil, nil, errors.New("persisted: redis URL is empty")
	}
	return RedisClientFor(redisconn.Config{URL: rawURL}, opts...)
}

// RedisClientFor is RedisClient for a connection in the redis block form
// (redisconn.Config: a URL and/or addrs, mode, master_name, credentials,
// tls). Its placeholders ({env.*}) are replaced here.
func RedisClientFor(conn redisconn.Config, opts ...RedisOption) (redis.UniversalClient, func(), error) {
	var cfg redisClientConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.timeout < 0 {
		return nil, nil, fmt.Errorf("persisted: redis timeout %s is negative", cfg.timeout)
	}
	if cfg.username != "" {
		conn.Username = cfg.username
	}
	if cfg.password != "" {
		conn.Password = cfg.password
	}
	target, err := conn.Resolve(nil)
	if err != nil {
		return nil, nil, fmt.Errorf("persisted: %w", err) // redisconn never echoes a password
	}
	key := "persisted-redis:" + target.Key() + "|" + cfg.timeout.String()
	val, _, err := redisClients.LoadOrNew(key, func() (caddy.Destructor, error) {
		p := &pooledRedis{client: target.Open(redisconn.Tuning{DialTimeout: cfg.timeout, ReadTimeout: cfg.timeout,
			WriteTimeout: cfg.timeout, ContextTimeoutEnabled: true})}
		p.client.AddHook(reportingHook{p})
		if cfg.reporter != nil {
			_ = cfg.reporter.Warm(context.Background(), p.client, target)
		} else {
			_ = target.Warm(context.Background(), p.client)
		}
		return p, nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("persisted: redis client: %w", err)
	}
	p := val.(*pooledRedis)
	if cfg.reporter != nil {
		p.reporter.Store(cfg.reporter)
	}
	var once sync.Once
	release := func() {
		once.Do(func() { _, _ = redisClients.Delete(key) })
	}
	return p.client, release, nil
}

// reportingHook reports every failed command (and pipeline) of the client
// through its current Reporter: a missing key (redis.Nil) is no failure.
type reportingHook struct{ p *pooledRedis }

func (h reportingHook) report(err error, op string) {
	if err == nil || errors.Is(err, redis.Nil) {
		return
	}
	if r := h.p.reporter.Load(); r != nil {
		r.Report(err, "persisted query store: Redis call failed", zapOp(op))
	}
	redisconn.ReloadTopology(h.p.client, err)
}

// DialHook leaves dialing as it is: a dial error fails the command, which
// is reported.
func (reportingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook reports a failed command.
func (h reportingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.report(err, cmd.Name())
		return err
	}
}

// ProcessPipelineHook reports a failed pipeline once.
func (h reportingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.report(err, "pipeline")
		return err
	}
}

// zapOp is the log field naming the Redis command that failed.
func zapOp(op string) zap.Field { return zap.String("op", op) }
