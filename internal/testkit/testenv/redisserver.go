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
	NeedsServices(t)
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

// redisProcess is one redis-server process (a data node or a sentinel) run
// from a config file in its own directory. The engines below (cluster,
// sentinel, TLS) are made of these; each is killed when its test ends.
type redisProcess struct {
	addr string
	port int
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// startRedisProcess writes conf to dir/redis.conf and starts redis-server on
// it (with extra arguments, e.g. --sentinel). It does not wait for readiness:
// see waitRedisReady.
func startRedisProcess(t testing.TB, port int, dir, conf string, args ...string) *redisProcess {
	t.Helper()
	bin, err := redisServerBin()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	confPath := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	logf, err := os.OpenFile(filepath.Join(dir, "redis.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	cmd := exec.Command(bin, append([]string{confPath}, args...)...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		t.Fatalf("testenv: start redis-server: %v", err)
	}
	p := &redisProcess{addr: "127.0.0.1:" + strconv.Itoa(port), port: port, dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(p.done) }()
	t.Cleanup(p.kill)
	return p
}

// kill stops the process with SIGKILL (no goodbye to clients or peers) and
// waits for it to exit; it does nothing when the process has exited.
func (p *redisProcess) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// running reports whether the process has not exited.
func (p *redisProcess) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// logTail is the end of the process's log, for failure messages.
func (p *redisProcess) logTail() string {
	b, err := os.ReadFile(filepath.Join(p.dir, "redis.log"))
	if err != nil {
		return err.Error()
	}
	if len(b) > 1500 {
		b = b[len(b)-1500:]
	}
	return string(b)
}

// waitRedisReady polls PING through a client with opts (Addr is set to the
// process's) until it answers, failing the test with the log's tail if the
// process exits or does not answer within 30 s.
func waitRedisReady(t testing.TB, p *redisProcess, opts *redis.Options) {
	t.Helper()
	o := *opts
	o.Addr, o.MaxRetries, o.DialTimeout = p.addr, -1, time.Second
	c := redis.NewClient(&o)
	defer c.Close()
	waitFor(t, 30*time.Second, "redis-server "+p.addr+" answers PING", func() (bool, string) {
		if !p.running() {
			t.Fatalf("testenv: redis-server %s exited at start:\n%s", p.addr, p.logTail())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := c.Ping(ctx).Err(); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// waitFor polls cond every 50 ms until it holds, failing the test with what
// and cond's last explanation when timeout passes first.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (ok bool, why string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("testenv: %s: not within %s: %s", what, timeout, why)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition with a deadline
	}
}

// dataNodeConf is the config every private data node shares: loopback only,
// no persistence, its own port and directory.
func dataNodeConf(port int, dir string) string {
	return fmt.Sprintf("port %d\nbind 127.0.0.1\nsave \"\"\nappendonly no\ndir %q\ndaemonize no\n", port, dir)
}
