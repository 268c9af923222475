// Command varsload measures the policy chain's CPU per request when every
// request carries the same document with a different variable value, so the
// guard's per-operation variables memo always misses (docs/benchmarks-log.md "Policy
// chain with per-request-unique variables"). It runs the example library
// engine (examples/other-backend/library) in-process as the upstream and
// drives closed-loop HTTP/1.1 keep-alive connections against cells
// "target:mode" (mode unique: variable $m = "m-<counter>", every request
// different; mode same: the same variables every time), interleaved for a
// number of rounds, reading each target process's utime+stime from
// /proc/<pid>/stat over the measured seconds. Run by bench/unique-vars.sh
// (bench/run.sh unique-vars).
//
//	varsload --engine 127.0.0.1:18391 --target plain=http://127.0.0.1:18392/graphql \
//	         --target gateway=http://127.0.0.1:18393/graphql --auth gateway \
//	         --pid plain=PID --pid gateway=PID --cells plain:unique,gateway:same,gateway:unique
//
// The bearer key for --auth targets comes from VARSLOAD_BEARER and is never printed.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/civicgate/civicgate/examples/other-backend/library"
)

const query = `query L($m: ID!, $first: Int) { loans(memberId: $m, first: $first) { id due returned book { id title } } }`

type target struct {
	name, url string
	auth      bool
	pid       int
}

type cellSpec struct {
	target target
	unique bool
}

func (c cellSpec) String() string {
	if c.unique {
		return c.target.name + ":unique"
	}
	return c.target.name + ":same"
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "varsload:", err)
		os.Exit(1)
	}
}

type config struct {
	engine           string
	cells            []cellSpec
	conns, rounds    int
	duration, warmup time.Duration
	bearer           string
}

func parse(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("varsload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var targets, auths, pids listFlag
	engine := fs.String("engine", "127.0.0.1:18391", "address the in-process engine listens on")
	fs.Var(&targets, "target", "name=http://… (repeat)")
	fs.Var(&auths, "auth", "target that gets Authorization: Bearer $VARSLOAD_BEARER")
	fs.Var(&pids, "pid", "target=PID whose CPU is measured")
	cells := fs.String("cells", "plain:unique,gateway:same,gateway:unique", "target:mode cells in interleaving order (mode unique or same)")
	conns := fs.Int("conns", 16, "closed-loop connections")
	rounds := fs.Int("rounds", 3, "rounds")
	duration := fs.Duration("duration", 2*time.Second, "measured time per cell and round")
	warmup := fs.Duration("warmup", 500*time.Millisecond, "unmeasured time before each measurement")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	cfg := config{engine: *engine, conns: *conns, rounds: *rounds, duration: *duration, warmup: *warmup}
	byName := map[string]target{}
	for _, t := range targets {
		name, url, ok := strings.Cut(t, "=")
		if !ok || !strings.HasPrefix(url, "http") {
			return cfg, fmt.Errorf("--target %q: want name=http://…", t)
		}
		byName[name] = target{name: name, url: url, auth: slices.Contains(auths, name)}
	}
	for _, p := range pids {
		name, v, _ := strings.Cut(p, "=")
		pid, err := strconv.Atoi(v)
		t, ok := byName[name]
		if err != nil || !ok {
			return cfg, fmt.Errorf("--pid %q: want target=PID", p)
		}
		t.pid = pid
		byName[name] = t
	}
	for _, c := range strings.Split(*cells, ",") {
		name, mode, _ := strings.Cut(strings.TrimSpace(c), ":")
		t, ok := byName[name]
		if !ok || (mode != "unique" && mode != "same") {
			return cfg, fmt.Errorf("--cells %q: want target:unique or target:same of a --target", c)
		}
		cfg.cells = append(cfg.cells, cellSpec{target: t, unique: mode == "unique"})
	}
	if len(auths) > 0 {
		if cfg.bearer = os.Getenv("VARSLOAD_BEARER"); cfg.bearer == "" {
			return cfg, errors.New("--auth needs VARSLOAD_BEARER")
		}
	}
	if cfg.conns < 1 || cfg.rounds < 1 || cfg.duration <= 0 {
		return cfg, errors.New("--conns, --rounds ≥ 1, --duration > 0")
	}
	return cfg, nil
}

type result struct {
	cell     cellSpec
	requests int64
	errors   int64
	elapsed  time.Duration
	cpu      time.Duration
	p50, p99 time.Duration
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parse(args, stderr)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.engine)
	if err != nil {
		return fmt.Errorf("engine listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/graphql", library.NewHandler(library.NewCatalog(), library.NewLoanEvents(), library.Options{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	var counter atomic.Int64
	// Each round starts one cell later than the previous one, so every cell
	// runs in every position as often as the others: a cell that runs last
	// measured several µs/req more than the same cell run first (machine
	// state drifts within a round), which a fixed order charges to one cell.
	n := len(cfg.cells)
	results := make([]result, cfg.rounds*n)
	for r := range cfg.rounds {
		for k := range n {
			ci := (r + k) % n
			c := cfg.cells[ci]
			res, err := cell(ctx, cfg, c, &counter)
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "varsload: round %d %s: %.0f req/s, %.1f CPU µs/req, p50 %v p99 %v, %d errors\n",
				r+1, c, float64(res.requests)/res.elapsed.Seconds(), cpuPerReq(res), res.p50, res.p99, res.errors)
			results[r*n+ci] = res
		}
	}
	report(stdout, cfg, results)
	return nil
}

func body(unique bool, n int64) []byte {
	m := "m1"
	if unique {
		m = "m-" + strconv.FormatInt(n, 10)
	}
	return []byte(`{"query":"` + query + `","operationName":"L","variables":{"m":"` + m + `","first":5}}`)
}

func cell(ctx context.Context, cfg config, c cellSpec, counter *atomic.Int64) (result, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: cfg.conns, MaxConnsPerHost: cfg.conns, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var measuring atomic.Bool
	var reqs, errs atomic.Int64
	lats := make([][]time.Duration, cfg.conns)
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for i := range cfg.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cctx.Err() == nil {
				req, _ := http.NewRequestWithContext(cctx, http.MethodPost, c.target.url, bytes.NewReader(body(c.unique, counter.Add(1))))
				req.Header.Set("Content-Type", "application/json")
				if c.target.auth {
					req.Header.Set("Authorization", "Bearer "+cfg.bearer)
				}
				t0 := time.Now()
				resp, err := client.Do(req)
				ok := false
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					ok = resp.StatusCode == 200 && bytes.HasPrefix(b, []byte(`{"data":`)) && !bytes.Contains(b, []byte(`"errors"`))
					if !ok && firstErr.Load() == nil {
						firstErr.Store(fmt.Sprintf("HTTP %d %.200s", resp.StatusCode, b))
					}
				} else if cctx.Err() != nil {
					return
				}
				if measuring.Load() {
					reqs.Add(1)
					lats[i] = append(lats[i], time.Since(t0))
					if !ok {
						errs.Add(1)
					}
				}
			}
		}()
	}
	time.Sleep(cfg.warmup)
	cpu0, err := procCPU(c.target.pid)
	if err != nil {
		cancel()
		wg.Wait()
		return result{}, err
	}
	start := time.Now()
	measuring.Store(true)
	time.Sleep(cfg.duration)
	measuring.Store(false)
	elapsed := time.Since(start)
	cpu1, _ := procCPU(c.target.pid)
	cancel()
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		fmt.Fprintf(os.Stderr, "varsload: %s: first error: %s\n", c, e)
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	slices.Sort(all)
	res := result{cell: c, requests: reqs.Load(), errors: errs.Load(), elapsed: elapsed, cpu: cpu1 - cpu0}
	if len(all) > 0 {
		res.p50, res.p99 = all[len(all)/2], all[len(all)*99/100]
	}
	return res, nil
}

func procCPU(pid int) (time.Duration, error) {
	if pid == 0 {
		return 0, nil
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short stat")
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100, nil
}

func cpuPerReq(r result) float64 {
	if r.requests == 0 {
		return 0
	}
	return float64(r.cpu.Microseconds()) / float64(r.requests)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func report(w io.Writer, cfg config, rs []result) {
	fmt.Fprintf(w, "Document `%s`, variables {m, first: 5}; %d connections, %d rounds × %v measured (after %v warm-up) per cell, cells interleaved in the order %v, rotated by one cell each round.\n\n",
		query, cfg.conns, cfg.rounds, cfg.duration, cfg.warmup, cfg.cells)
	fmt.Fprintln(w, "| round | cell | req/s | p50 µs | p99 µs | errors / requests | proxy CPU µs/req |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|")
	n := len(cfg.cells)
	for i, r := range rs {
		fmt.Fprintf(w, "| %d | %s | %.0f | %d | %d | %d / %d | %.1f |\n", i/n+1, r.cell, float64(r.requests)/r.elapsed.Seconds(),
			r.p50.Microseconds(), r.p99.Microseconds(), r.errors, r.requests, cpuPerReq(r))
	}
	// Per round: gateway cell − plain:unique of the same round.
	var base *cellSpec
	for i := range cfg.cells {
		if !strings.Contains(cfg.cells[i].target.name, "gateway") {
			base = &cfg.cells[i]
			break
		}
	}
	if base == nil {
		return
	}
	fmt.Fprintf(w, "\nAgainst `%s` of the same round (median over rounds):\n\n", base)
	fmt.Fprintln(w, "| cell | added proxy CPU µs/req | target | verdict | throughput ratio |")
	fmt.Fprintln(w, "|---|---:|---|---|---:|")
	for ci, c := range cfg.cells {
		if c == *base {
			continue
		}
		var dcpu, ratio []float64
		for r := range cfg.rounds {
			var b result
			for bi := range cfg.cells {
				if cfg.cells[bi] == *base {
					b = rs[r*n+bi]
				}
			}
			x := rs[r*n+ci]
			dcpu = append(dcpu, cpuPerReq(x)-cpuPerReq(b))
			ratio = append(ratio, (float64(x.requests)/x.elapsed.Seconds())/(float64(b.requests)/b.elapsed.Seconds()))
		}
		d := median(dcpu)
		verdict := "**met**"
		if d > 10 {
			verdict = "**not met**"
		}
		fmt.Fprintf(w, "| %s | %.1f | ≤ 10 µs | %s | %.3f |\n", c, d, verdict, median(ratio))
	}
}
