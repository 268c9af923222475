package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// server is one GraphQL server under test: where to send the page, which process serves it and which
// application_name its PostgreSQL connections carry.
type server struct {
	name    string
	url     string
	pid     int
	appName string
	body    []byte                             // the page request
	items   func(body []byte) ([]any, error)   // the page's items, to check both servers answer the same page
	client  *http.Client                       // conns keep-alive connections, this server's own
	post    func(context.Context) (int, error) // one request: the body's length, or why it is not the page
}

func newServer(name, url string, pid int, appName string, body []byte, items func([]byte) ([]any, error), conns int) *server {
	s := &server{name: name, url: url, pid: pid, appName: appName, body: body, items: items}
	s.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxConnsPerHost: conns, MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: 5 * time.Minute,
	}}
	s.post = func(ctx context.Context) (int, error) {
		b, status, err := s.fetch(ctx)
		if err != nil {
			return 0, err
		}
		// A page that failed in GraphQL still answers 200 (PostGraphile) or 200/400 (recordsd): any "errors"
		// key means the round measured something other than the page.
		if status != http.StatusOK || bytes.Contains(b, []byte(`"errors"`)) {
			return 0, fmt.Errorf("%s: status %d: %.200s", s.name, status, b)
		}
		return len(b), nil
	}
	return s
}

func (s *server) fetch(ctx context.Context) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(s.body))
	if err != nil {
		return nil, 0, fmt.Errorf("%s: request: %w", s.name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: post: %w", s.name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: read body: %w", s.name, err)
	}
	return b, resp.StatusCode, nil
}

// drive keeps conns workers posting back to back until d has passed and returns every latency.
func drive(ctx context.Context, s *server, conns int, d time.Duration) ([]time.Duration, time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		all      []time.Duration
		firstErr error
		wg       sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 4096)
			for time.Now().Before(deadline) {
				t := time.Now()
				if _, err := s.post(ctx); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
					break
				}
				lat = append(lat, time.Since(t))
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return all, time.Since(start), firstErr
}

// cpuSnapshot is the CPU time, in clock ticks, of the server process and of each PostgreSQL backend whose
// application_name is the server's.
type cpuSnapshot struct {
	server   uint64
	backends map[int]uint64
}

func snapshot(ctx context.Context, db *pgx.Conn, s *server) (cpuSnapshot, error) {
	snap := cpuSnapshot{backends: map[int]uint64{}}
	t, err := procTicks(s.pid)
	if err != nil {
		return snap, fmt.Errorf("%s: %w", s.name, err)
	}
	snap.server = t
	rows, err := db.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()`, s.appName)
	if err != nil {
		return snap, fmt.Errorf("pg_stat_activity: %w", err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return snap, fmt.Errorf("pg_stat_activity: %w", err)
	}
	for _, pid := range pids {
		if t, err := procTicks(int(pid)); err == nil { // a backend that ended in between has no CPU left to count
			snap.backends[int(pid)] = t
		}
	}
	return snap, nil
}

// backendDelta is the CPU the backends spent between two snapshots: a backend that appeared in between counts
// from zero; one that ended in between is lost (returned as ended, so the report can say so).
func backendDelta(before, after cpuSnapshot) (ticks uint64, ended int) {
	for pid, t := range after.backends {
		ticks += t - min(t, before.backends[pid])
	}
	for pid := range before.backends {
		if _, ok := after.backends[pid]; !ok {
			ended++
		}
	}
	return ticks, ended
}

// procTicks reads utime+stime of a whole process (every thread, living or ended) from /proc/<pid>/stat.
func procTicks(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("cpu of pid %d: %w", pid, err)
	}
	return parseStatTicks(string(b))
}

// parseStatTicks parses proc(5)'s stat line: the command name in parentheses may hold spaces and parentheses,
// so the fields are counted from the last ')'; utime and stime are fields 14 and 15.
func parseStatTicks(line string) (uint64, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat line without a command name")
	}
	f := strings.Fields(line[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("stat line with %d fields", len(f)+2)
	}
	u, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime: %w", err)
	}
	s, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime: %w", err)
	}
	return u + s, nil
}

// percentile is the nearest-rank percentile of sorted latencies.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func sortDurations(d []time.Duration) { sort.Slice(d, func(i, j int) bool { return d[i] < d[j] }) }
