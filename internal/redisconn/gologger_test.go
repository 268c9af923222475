//go:build linux

package redisconn

import (
	"context"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestGoRedisDialFailureIsLoggedThroughZap: go-redis' own "failed to dial"
// line reaches the structured log (at warn, without the URL's password) and
// nothing reaches the process's stderr — it used to be printed there by the
// standard log package. A burst is one line; a second later the next one
// counts what was suppressed.
func TestGoRedisDialFailureIsLoggedThroughZap(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	prev := goRedisSink
	goRedisSink = func() *zap.Logger { return zap.New(core) }
	t.Cleanup(func() { goRedisSink = prev })

	tg, err := (&Config{URL: "redis://gw:" + secret + "@127.0.0.1:" + itoa(testenv.FreePort(t))}).Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := tg.Open(Tuning{MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
	defer c.Close()

	stderr := captureStderr(t, func() {
		for range 3 {
			if err := c.Ping(context.Background()).Err(); Cause(err) != CauseRefused {
				t.Errorf("ping: %v, want a refused connection", err)
			}
		}
	})
	if strings.Contains(stderr, "failed to dial") || strings.Contains(stderr, "redis:") {
		t.Fatalf("go-redis printed to stderr: %q", stderr)
	}
	dials := logs.FilterField(zap.Int("suppressed", 0)).FilterMessage("go-redis").All()
	if len(dials) != 1 || dials[0].Level != zapcore.WarnLevel {
		t.Fatalf("zap got %v, want one warn line for the burst", logs.All())
	}
	detail := dials[0].ContextMap()["detail"].(string)
	if !strings.Contains(detail, "redis: connection pool: failed to dial after 1 attempts") || !strings.Contains(detail, "connection refused") {
		t.Fatalf("detail %q", detail)
	}
	for _, e := range logs.All() {
		if strings.Contains(e.ContextMap()["detail"].(string), secret) {
			t.Fatalf("the password reached the log: %v", e.ContextMap())
		}
	}
}

// TestGoRedisLoggerRateLimitsAndRedacts: one line per message form per
// second, the next one counting the suppressed ones; URL credentials are
// replaced.
func TestGoRedisLoggerRateLimitsAndRedacts(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	prev := goRedisSink
	goRedisSink = func() *zap.Logger { return zap.New(core) }
	t.Cleanup(func() { goRedisSink = prev })
	now := time.Unix(1000, 0)
	l := &goRedisLogger{now: func() time.Time { return now }, last: make(map[string]*causeLog)}
	for range 5 {
		l.Printf(context.Background(), "sentinel: cannot reach %s: %v", "rediss://u:"+secret+"@10.0.0.1:26379", "refused")
	}
	l.Printf(context.Background(), "another form %d", 1)
	now = now.Add(time.Second)
	l.Printf(context.Background(), "sentinel: cannot reach %s: %v", "redis://:"+secret+"@h:1", "refused")
	var got []string
	for _, e := range logs.All() {
		got = append(got, e.ContextMap()["detail"].(string)+" suppressed="+itoa(int(e.ContextMap()["suppressed"].(int64))))
	}
	want := []string{
		"sentinel: cannot reach rediss://…@10.0.0.1:26379: refused suppressed=0",
		"another form 1 suppressed=0",
		"sentinel: cannot reach redis://…@h:1: refused suppressed=4",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// captureStderr runs f with file descriptor 2 on a pipe (what go-redis'
// default logger, which holds os.Stderr, would write to) and returns what
// was written.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved, err := syscall.Dup(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Dup3(int(w.Fd()), 2, 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	f()
	if err := syscall.Dup3(saved, 2, 0); err != nil {
		t.Fatal(err)
	}
	syscall.Close(saved)
	w.Close()
	return <-done
}
