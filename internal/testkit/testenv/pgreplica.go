package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PGCluster is a private PostgreSQL primary with streaming replicas, each its own
// server process on its own loopback port and data directory, for tests of read
// replicas: the shared server other packages use is never touched. The servers run
// as the `postgres` OS user (PostgreSQL refuses to run as root), are started with
// pg_ctl and stopped with `pg_ctl stop -m immediate` when the test ends. They trade
// durability for speed (fsync off, no initdb sync, small shared buffers).
type PGCluster struct {
	t        testing.TB
	bin      string // directory holding initdb, pg_ctl, pg_basebackup
	dir      string // owned by postgres, mode 0700
	asUser   bool   // run the binaries through runuser -u postgres (the test runs as root)
	Primary  *PGServer
	Replicas []*PGServer
}

// PGServer is one server of a PGCluster.
type PGServer struct {
	c       *PGCluster
	Name    string
	Port    int
	DataDir string
	LogFile string
	running bool
}

// pgBinDir finds the newest /usr/lib/postgresql/<ver>/bin holding pg_ctl
// (CIVICGATE_TEST_PGBIN overrides it).
func pgBinDir() (string, error) {
	if v := os.Getenv("CIVICGATE_TEST_PGBIN"); v != "" {
		return v, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(matches) == 0 {
		return "", fmt.Errorf("no /usr/lib/postgresql/<version>/bin/pg_ctl (scripts/services.sh installs PostgreSQL)")
	}
	sort.Slice(matches, func(i, j int) bool { return pgVersionOf(matches[i]) > pgVersionOf(matches[j]) })
	return filepath.Dir(matches[0]), nil
}

func pgVersionOf(pgCtl string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(pgCtl))))
	return n
}

// StartPostgresPrimaryWithReplica starts a primary (wal_level=replica) and one
// streaming replica made by pg_basebackup -R, and waits until the replica streams.
func StartPostgresPrimaryWithReplica(t testing.TB) *PGCluster {
	t.Helper()
	c := StartPostgresPrimary(t)
	c.AddReplica()
	return c
}

// StartPostgresPrimary starts a primary with no replica yet (AddReplica adds them).
func StartPostgresPrimary(t testing.TB) *PGCluster {
	t.Helper()
	NeedsServices(t)
	bin, err := pgBinDir()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	c := &PGCluster{t: t, bin: bin, asUser: os.Geteuid() == 0}
	c.dir = c.ownedDir(t.TempDir())
	p := &PGServer{c: c, Name: "primary", Port: FreePort(t), DataDir: filepath.Join(c.dir, "primary"), LogFile: filepath.Join(c.dir, "primary.log")}
	c.run("initdb", "-D", p.DataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "-N")
	conf := strings.Join([]string{
		"listen_addresses = '127.0.0.1'",
		"unix_socket_directories = ''",
		"wal_level = replica",
		"max_wal_senders = 10",
		"max_replication_slots = 10",
		"hot_standby = on",
		"fsync = off",
		"full_page_writes = off",
		"shared_buffers = 16MB",
		"max_connections = 60",
		"wal_receiver_status_interval = 1s",
		"wal_retrieve_retry_interval = 200ms",
		"logging_collector = off",
	}, "\n") + "\n"
	f, err := os.OpenFile(filepath.Join(p.DataDir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	_, err = f.WriteString(conf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("testenv: write postgresql.conf: %v", err)
	}
	c.Primary = p
	p.Start()
	t.Cleanup(c.stopAll)
	return c
}

// ownedDir makes base traversable by the postgres user and returns a directory
// inside it owned by postgres with mode 0700 (PostgreSQL requires both of its data
// directory).
func (c *PGCluster) ownedDir(base string) string {
	dir := filepath.Join(base, "pg")
	if err := os.Mkdir(dir, 0o700); err != nil {
		c.t.Fatalf("testenv: %v", err)
	}
	if !c.asUser {
		return dir
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		c.t.Fatalf("testenv: the postgres OS user is needed to run a private PostgreSQL as root: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	// t.TempDir and its parent are 0700 root: let postgres traverse (not list) them.
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o711); err != nil {
			c.t.Fatalf("testenv: %v", err)
		}
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		c.t.Fatalf("testenv: chown %s to postgres: %v", dir, err)
	}
	return dir
}

// run runs one PostgreSQL binary to completion (as postgres when the test is root).
func (c *PGCluster) run(name string, args ...string) {
	c.t.Helper()
	out, err := c.runErr(name, args...)
	if err != nil {
		c.t.Fatalf("testenv: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func (c *PGCluster) runErr(name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := filepath.Join(c.bin, name)
	var cmd *exec.Cmd
	if c.asUser {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = c.dir
	return cmd.CombinedOutput()
}

// AddReplica clones the primary with pg_basebackup -R (a standby.signal and
// primary_conninfo), starts it and waits until it streams and has replayed
// everything the primary had flushed.
func (c *PGCluster) AddReplica() *PGServer {
	c.t.Helper()
	name := "replica" + strconv.Itoa(len(c.Replicas)+1)
	r := &PGServer{c: c, Name: name, Port: FreePort(c.t), DataDir: filepath.Join(c.dir, name), LogFile: filepath.Join(c.dir, name+".log")}
	c.run("pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(c.Primary.Port), "-U", "postgres",
		"-D", r.DataDir, "-R", "-X", "stream", "-c", "fast", "-N")
	c.Replicas = append(c.Replicas, r)
	r.Start()
	c.WaitStreaming(r)
	c.WaitCaughtUp(r)
	return r
}

// Start starts the server with pg_ctl and waits until it accepts connections.
func (s *PGServer) Start() {
	s.c.t.Helper()
	if s.running {
		s.c.t.Fatalf("testenv: %s already running", s.Name)
	}
	s.c.run("pg_ctl", "start", "-w", "-t", "60", "-D", s.DataDir, "-l", s.LogFile, "-o", "-p "+strconv.Itoa(s.Port))
	s.running = true
	s.watchdog()
	s.waitReady()
}

// watchdog starts a detached shell that stops the server once this test process is gone, so a test binary killed
// before its cleanups ran (a -timeout panic, SIGKILL) leaves no server behind. After a normal Stop its final
// pg_ctl stop finds nothing to stop. It holds none of the test's output pipes, which go test would wait for.
func (s *PGServer) watchdog() {
	script := fmt.Sprintf("while [ -d /proc/%d ]; do sleep 1; done; exec %s stop -m immediate -D %s",
		os.Getpid(), filepath.Join(s.c.bin, "pg_ctl"), s.DataDir)
	var cmd *exec.Cmd
	if s.c.asUser {
		cmd = exec.Command("runuser", "-u", "postgres", "--", "sh", "-c", script)
	} else {
		cmd = exec.Command("sh", "-c", script)
	}
	cmd.Dir = s.c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // not in the test's process group: a ^C reaches pg_ctl stop
	if err := cmd.Start(); err != nil {
		s.c.t.Fatalf("testenv: start the watchdog of %s: %v", s.Name, err)
	}
	go func() { _ = cmd.Wait() }() // reaped if it ends while the test runs
}

// Stop stops the server abruptly (pg_ctl stop -m immediate: no checkpoint, clients
// cut off, as a crash would), and waits until it is gone. It does nothing when the
// server is not running.
func (s *PGServer) Stop() {
	if !s.running {
		return
	}
	if out, err := s.c.runErr("pg_ctl", "stop", "-w", "-m", "immediate", "-D", s.DataDir); err != nil {
		s.c.t.Errorf("testenv: stop %s: %v\n%s", s.Name, err, out)
	}
	s.running = false
}

func (c *PGCluster) stopAll() {
	for _, r := range c.Replicas {
		r.Stop()
	}
	c.Primary.Stop()
}

// DSN is a DSN of database db on this server (trust auth, user postgres).
func (s *PGServer) DSN(db string) string {
	return "postgres://postgres@127.0.0.1:" + strconv.Itoa(s.Port) + "/" + db + "?sslmode=disable"
}

// Conn opens a connection to database db, closed when the test ends.
func (s *PGServer) Conn(db string) *pgx.Conn {
	s.c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN(db))
	if err != nil {
		s.c.t.Fatalf("testenv: connect to %s: %v (log %s)", s.Name, err, s.LogFile)
	}
	s.c.t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func (s *PGServer) waitReady() {
	s.c.t.Helper()
	s.poll(30*time.Second, "accept connections", func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, s.DSN("postgres"))
		if err != nil {
			return err
		}
		return conn.Close(ctx)
	})
}

// poll runs cond on a fresh short-lived context until it returns nil or within passes.
func (s *PGServer) poll(within time.Duration, what string, cond func(ctx context.Context) error) {
	s.c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := cond(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.c.t.Fatalf("testenv: %s did not %s within %s: %v (log %s)", s.Name, what, within, err, s.LogFile)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

// queryOne runs a one-value query on database postgres of s.
func (s *PGServer) queryOne(ctx context.Context, sql string, dst any) error {
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.QueryRow(ctx, sql).Scan(dst)
}

// WaitStreaming waits until replica r's WAL receiver reports streaming.
func (c *PGCluster) WaitStreaming(r *PGServer) {
	c.t.Helper()
	r.poll(30*time.Second, "stream from the primary", func(ctx context.Context) error {
		var status string
		if err := r.queryOne(ctx, `SELECT coalesce((SELECT status FROM pg_stat_wal_receiver), 'none')`, &status); err != nil {
			return err
		}
		if status != "streaming" {
			return fmt.Errorf("wal receiver status %q", status)
		}
		return nil
	})
}

// WaitCaughtUp waits until replica r has replayed everything the primary had
// flushed when it was called.
func (c *PGCluster) WaitCaughtUp(r *PGServer) {
	c.t.Helper()
	var target int64
	c.Primary.poll(10*time.Second, "report its WAL position", func(ctx context.Context) error {
		return c.Primary.queryOne(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_flush_lsn(), '0/0')::bigint`, &target)
	})
	r.poll(30*time.Second, "replay up to the primary's position", func(ctx context.Context) error {
		var replayed int64
		if err := r.queryOne(ctx, `SELECT coalesce(pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '0/0')::bigint, 0)`, &replayed); err != nil {
			return err
		}
		if replayed < target {
			return fmt.Errorf("replayed %d of %d", replayed, target)
		}
		return nil
	})
}

// PauseReplay pauses WAL replay on replica r (it keeps receiving): once it returns,
// no further WAL record is applied until ResumeReplay. (An idle standby reports
// "pause requested" until the next record arrives; that record is not applied.)
func (c *PGCluster) PauseReplay(r *PGServer) {
	c.t.Helper()
	r.poll(10*time.Second, "pause replay", func(ctx context.Context) error {
		var state string
		if err := r.queryOne(ctx, `SELECT pg_wal_replay_pause()::text || pg_get_wal_replay_pause_state()`, &state); err != nil {
			return err
		}
		if state != "paused" && state != "pause requested" {
			return fmt.Errorf("replay pause state %q", state)
		}
		return nil
	})
}

// ResumeReplay resumes WAL replay on replica r.
func (c *PGCluster) ResumeReplay(r *PGServer) {
	c.t.Helper()
	r.poll(10*time.Second, "resume replay", func(ctx context.Context) error {
		var state string
		if err := r.queryOne(ctx, `SELECT pg_wal_replay_resume()::text || pg_get_wal_replay_pause_state()`, &state); err != nil {
			return err
		}
		if state != "not paused" {
			return fmt.Errorf("replay pause state %q", state)
		}
		return nil
	})
}

// CreateDatabase creates database name on the primary (the replicas get it by
// replication) and returns nothing: DSN builds its DSN on any server.
func (c *PGCluster) CreateDatabase(name string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.Primary.DSN("postgres"))
	if err != nil {
		c.t.Fatalf("testenv: connect to primary: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		c.t.Fatalf("testenv: create database %s: %v", name, err)
	}
}
