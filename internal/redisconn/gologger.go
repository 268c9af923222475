package redisconn

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// go-redis prints its own lines ("redis: connection pool: failed to dial
// after 5 attempts: …") to stderr through the standard log package, outside
// the structured log and its redaction. Its logger is process-wide: the
// first Open installs one that forwards to Caddy's current default logger
// (so a reload's log configuration applies) at warn level, at most one line
// per message form per second, each with the number suppressed since.

var installGoRedisLogger sync.Once

// goRedisSink is where forwarded lines go (tests swap it).
var goRedisSink = func() *zap.Logger { return caddy.Log().Named("redis.client") }

// routeGoRedisLog installs the forwarding logger, once per process.
func routeGoRedisLog() {
	installGoRedisLogger.Do(func() {
		redis.SetLogger(&goRedisLogger{now: time.Now, last: make(map[string]*causeLog)})
	})
}

// goRedisLogger implements go-redis' internal.Logging.
type goRedisLogger struct {
	now  func() time.Time
	mu   sync.Mutex
	last map[string]*causeLog // by format: go-redis' formats are constants
}

// maxGoRedisForms bounds the formats remembered (go-redis has a few dozen).
const maxGoRedisForms = 256

// userinfo matches the credentials of a URL (scheme://user:password@).
var userinfo = regexp.MustCompile(`([a-z][a-z0-9+.-]*://)[^@/\s]*@`)

// Printf logs one go-redis line unless its form was logged less than a second ago.
func (l *goRedisLogger) Printf(_ context.Context, format string, v ...any) {
	now := l.now()
	l.mu.Lock()
	c, ok := l.last[format]
	if !ok {
		if len(l.last) >= maxGoRedisForms {
			clear(l.last)
		}
		c = &causeLog{}
		l.last[format] = c
	}
	if !c.last.IsZero() && now.Sub(c.last) < logEvery {
		c.suppressed++
		l.mu.Unlock()
		return
	}
	suppressed := c.suppressed
	c.last, c.suppressed = now, 0
	l.mu.Unlock()
	line := userinfo.ReplaceAllString(fmt.Sprintf(format, v...), "${1}…@")
	goRedisSink().Warn("go-redis", zap.String("detail", line), zap.Int("suppressed", suppressed))
}
