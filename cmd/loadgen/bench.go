package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cell is one measurement: one target at one connection count in one round.
type cell struct {
	target   string
	conns    int
	round    int
	requests int
	errors   int
	elapsed  time.Duration
	p50, p99 time.Duration
	cpu      map[string]time.Duration // process name → CPU time during the measurement
	redisCmd int64                    // Redis commands during the measurement (-1: not measured)
	firstErr string
}

func (c cell) rps() float64 { return float64(c.requests) / c.elapsed.Seconds() }

// cpuPerReq is the named process's CPU microseconds per request.
func (c cell) cpuPerReq(name string) (float64, bool) {
	d, ok := c.cpu[name]
	if !ok || c.requests == 0 {
		return 0, false
	}
	return float64(d.Microseconds()) / float64(c.requests), true
}

// results holds every cell in the order it ran.
type results struct {
	cells []cell
	start time.Time
	end   time.Time
}

// bench checks every target, then runs rounds × conns × targets cells.
func bench(ctx context.Context, cfg config, log io.Writer) (results, error) {
	res := results{start: time.Now()}
	if err := checkTargets(ctx, cfg); err != nil {
		return res, err
	}
	for round := 1; round <= cfg.rounds; round++ {
		for _, n := range cfg.conns {
			for _, t := range cfg.targets {
				c, err := measure(ctx, cfg, t, n)
				if err != nil {
					return res, err
				}
				c.round = round
				fmt.Fprintf(log, "round %d/%d %-8s conns=%-3d %8.0f req/s p50=%-9s p99=%-9s errors=%d\n",
					round, cfg.rounds, t.name, n, c.rps(), c.p50.Round(time.Microsecond), c.p99.Round(time.Microsecond), c.errors)
				if c.firstErr != "" {
					fmt.Fprintf(log, "  first error: %s\n", c.firstErr)
				}
				res.cells = append(res.cells, c)
			}
		}
	}
	res.end = time.Now()
	return res, nil
}

// newClient is one keep-alive HTTP/1.1 connection's client.
func newClient() *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        1,
			MaxIdleConnsPerHost: 1,
			MaxConnsPerHost:     1,
			DisableCompression:  true,
			ForceAttemptHTTP2:   false,
		},
	}
}

// errTransport marks a request that got no answer (e.g. the target is not
// listening yet), as opposed to a wrong answer.
var errTransport = errors.New("no answer")

// doer sends requests of the mix to one target over one connection and
// checks each answer: 200 and a "data" object without "errors".
type doer struct {
	client *http.Client
	t      target
	bearer string
	buf    bytes.Buffer
}

func (d *doer) do(ctx context.Context, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.t.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("new request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if d.t.auth {
		req.Header.Set("Authorization", "Bearer "+d.bearer)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("post %s: %w: %w", d.t.name, errTransport, err)
	}
	d.buf.Reset()
	_, err = d.buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", d.t.name, err)
	}
	b := d.buf.Bytes()
	if resp.StatusCode != http.StatusOK {
		return b, fmt.Errorf("%s: HTTP %d: %.200s", d.t.name, resp.StatusCode, b)
	}
	if !bytes.HasPrefix(b, []byte(`{"data":{`)) || bytes.Contains(b, []byte(`"errors":`)) {
		return b, fmt.Errorf("%s: GraphQL error: %.200s", d.t.name, b)
	}
	return b, nil
}

// checkTargets waits (up to 60 s) until every target answers the whole mix
// and checks that every target returns the same bytes for each request: the
// proxies must be transparent for the comparison to mean anything.
func checkTargets(ctx context.Context, cfg config) error {
	first := map[string][]byte{}
	for _, t := range cfg.targets {
		d := &doer{client: newClient(), t: t, bearer: cfg.bearer}
		deadline := time.Now().Add(60 * time.Second)
		for i, rq := range cfg.mix {
			var body []byte
			var err error
			for {
				body, err = d.do(ctx, rq.body)
				if err == nil || i > 0 || !errors.Is(err, errTransport) || time.Now().After(deadline) || ctx.Err() != nil {
					break
				}
				select { // the target may still be starting: retry the first request while it does not answer
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
			if err != nil {
				return fmt.Errorf("target check (%s): %w", rq.name, err)
			}
			if prev, ok := first[rq.name]; !ok {
				first[rq.name] = slices.Clone(body)
			} else if !bytes.Equal(prev, body) {
				return fmt.Errorf("target %s answers %q differently from %s: %.120s vs %.120s",
					t.name, rq.name, cfg.targets[0].name, body, prev)
			}
		}
		d.client.CloseIdleConnections()
	}
	return nil
}

// measure runs conns closed-loop connections against t for the warm-up, then
// for the measured duration, and reads CPU and Redis counters around the
// measured part.
func measure(ctx context.Context, cfg config, t target, conns int) (cell, error) {
	c := cell{target: t.name, conns: conns, redisCmd: -1}
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		lat       []time.Duration
		errs      int
		firstErr  string
		measuring = make(chan struct{})
		stop      = make(chan struct{})
	)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for w := 0; w < conns; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			d := &doer{client: newClient(), t: t, bearer: cfg.bearer}
			defer d.client.CloseIdleConnections()
			local := make([]time.Duration, 0, 1<<14)
			localErrs := 0
			localFirst := ""
			on := false
			for i := w; ; i++ {
				stopped := false
				select {
				case <-stop:
					stopped = true
				default:
				}
				if stopped {
					mu.Lock()
					lat = append(lat, local...)
					errs += localErrs
					if firstErr == "" {
						firstErr = localFirst
					}
					mu.Unlock()
					return
				}
				if !on {
					select {
					case <-measuring:
						on = true
					default:
					}
				}
				t0 := time.Now()
				_, err := d.do(cctx, cfg.mix[i%len(cfg.mix)].body)
				el := time.Since(t0)
				if !on {
					continue
				}
				if err != nil {
					if cctx.Err() != nil {
						continue
					}
					localErrs++
					if localFirst == "" {
						localFirst = err.Error()
					}
					continue
				}
				local = append(local, el)
			}
		}(w)
	}
	sleepCtx(ctx, cfg.warmup)
	cpu0, err := readCPU(cfg.procs)
	if err != nil {
		close(stop)
		wg.Wait()
		return c, err
	}
	r0, rerr := redisCommands(ctx, cfg.redis)
	t0 := time.Now()
	close(measuring)
	sleepCtx(ctx, cfg.duration)
	close(stop)
	// Requests in flight finish (and are not counted) before the counters are read.
	wg.Wait()
	c.elapsed = time.Since(t0)
	cpu1, err := readCPU(cfg.procs)
	if err != nil {
		return c, err
	}
	if cfg.redis != "" {
		r1, rerr1 := redisCommands(ctx, cfg.redis)
		if rerr != nil || rerr1 != nil {
			return c, fmt.Errorf("redis INFO: %w", errors.Join(rerr, rerr1))
		}
		c.redisCmd = r1 - r0
	}
	if ctx.Err() != nil {
		return c, fmt.Errorf("interrupted: %w", ctx.Err())
	}
	c.cpu = map[string]time.Duration{}
	for name, v := range cpu1 {
		c.cpu[name] = v - cpu0[name]
	}
	c.requests = len(lat)
	c.errors = errs
	c.firstErr = firstErr
	slices.Sort(lat)
	c.p50 = percentile(lat, 0.50)
	c.p99 = percentile(lat, 0.99)
	return c, nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// percentile of sorted durations (nearest rank); 0 for none.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat
// (100 on every Linux architecture Go supports).
const clockTicks = 100

// readCPU returns utime+stime of every process, plus "loadgen" (this process).
func readCPU(procs []proc) (map[string]time.Duration, error) {
	out := make(map[string]time.Duration, len(procs)+1)
	self, err := procCPU("/proc/self/stat")
	if err != nil {
		return nil, err
	}
	out["loadgen"] = self
	for _, p := range procs {
		v, err := procCPU("/proc/" + strconv.Itoa(p.pid) + "/stat")
		if err != nil {
			return nil, fmt.Errorf("process %s: %w", p.name, err)
		}
		out[p.name] = v
	}
	return out, nil
}

// procCPU parses utime (field 14) and stime (field 15) of a stat file; the
// command name (field 2) may hold spaces, so fields are counted after ")".
func procCPU(path string) (time.Duration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("%s: no command field", path)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime is field 14 → f[11], stime f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("%s: %d fields", path, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%s: bad utime/stime: %w", path, errors.Join(err1, err2))
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// redisCommands is the total of calls over every command in INFO
// commandstats, except INFO itself (this program's own probe).
func redisCommands(ctx context.Context, addr string) (int64, error) {
	if addr == "" {
		return 0, nil
	}
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return 0, fmt.Errorf("dial redis: %w", err)
	}
	defer conn.Close()
	if dl, ok := dctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte("*2\r\n$4\r\nINFO\r\n$12\r\ncommandstats\r\n")); err != nil {
		return 0, fmt.Errorf("write INFO: %w", err)
	}
	br := bufio.NewReader(conn)
	head, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "$") {
		return 0, fmt.Errorf("INFO reply %q: %w", head, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil {
		return 0, fmt.Errorf("INFO reply length %q: %w", head, err)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return 0, fmt.Errorf("read INFO: %w", err)
	}
	return sumCommandStats(string(body))
}

// sumCommandStats adds the calls= of every cmdstat_ line except info.
func sumCommandStats(info string) (int64, error) {
	var total int64
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		name, rest, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return 0, fmt.Errorf("commandstats %q: %w", line, err)
				}
				total += n
			}
		}
	}
	return total, nil
}
