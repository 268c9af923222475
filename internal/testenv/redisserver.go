package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is a private redis-server process on its own loopback port and
// directory, for tests that stop and restart Redis: the shared server that
// other packages use in parallel is never touched. It has no persistence, so a
// restart starts empty, like a crashed cache node.
type RedisServer struct {
	t    testing.TB
	bin  string
	port int
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// redisServerBin finds redis-server on PATH or in /usr/bin.
func redisServerBin() (string, error) {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/redis-server"); err == nil {
		return "/usr/bin/redis-server", nil
	}
	return "", fmt.Errorf("redis-server not found on PATH or in /usr/bin (scripts/services.sh installs it: make services)")
}

// StartRedisServer starts a private Redis and stops it when the test ends.
// A missing redis-server binary fails the test: it never skips.
func StartRedisServer(t testing.TB) *RedisServer {
	t.Helper()
	bin, err := redisServerBin()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	r := &RedisServer{t: t, bin: bin, port: FreePort(t), dir: t.TempDir()}
	r.Start()
	t.Cleanup(r.Kill)
	return r
}

// Addr is the server's host:port (the same across restarts).
func (r *RedisServer) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// URL is a redis:// URL for the server.
func (r *RedisServer) URL() string { return "redis://" + r.Addr() + "/0" }

// Start starts the server (again) on its port and waits until it answers PING.
func (r *RedisServer) Start() {
	r.t.Helper()
	if r.cmd != nil {
		r.t.Fatal("testenv: redis-server already running")
	}
	logf, err := os.OpenFile(filepath.Join(r.dir, "redis.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		r.t.Fatalf("testenv: %v", err)
	}
	cmd := exec.Command(r.bin, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", r.dir, "--daemonize", "no")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		r.t.Fatalf("testenv: start redis-server: %v", err)
	}
	r.cmd, r.done = cmd, make(chan struct{})
	done := r.done
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(done) }()

	c := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		select {
		case <-done:
			r.cmd = nil
			r.t.Fatalf("testenv: redis-server exited at start (log in %s)", r.dir)
		default:
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("testenv: redis-server on %s did not answer PING: %v", r.Addr(), err)
		}
		time.Sleep(20 * time.Millisecond) // polling readiness with a deadline
	}
}

// Kill stops the server abruptly (SIGKILL: no goodbye to clients) and waits
// for the process to exit. It does nothing when the server is not running.
func (r *RedisServer) Kill() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.done
	r.cmd = nil
}

// Client returns a client on the server, closed when the test ends.
func (r *RedisServer) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	r.t.Cleanup(func() { _ = c.Close() })
	return c
}
