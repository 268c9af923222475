// Command subsload measures graphql-transport-ws subscriptions through the
// gateway against the same subscriptions made directly to the engine (issue
// 17): it runs the example library engine (examples/other-backend/library)
// in-process, so that it can timestamp each event as it publishes it, opens
// SOCKETS×SUBS loanEvents subscriptions to each target in turn, publishes
// events, and reports per-delivery latency (publish → the client has read the
// "next" frame) p50/p99/max, the gateway's memory per subscription (VmRSS of
// its process and, after a forced GC, Go heap+stack in use from its admin
// endpoint) and the gateway's CPU per delivery. Run by bench/subscriptions.sh
// (bench/run.sh subscriptions).
//
//	subsload --engine 127.0.0.1:18191 --target direct=ws://127.0.0.1:18191/graphql \
//	         --target gateway=ws://127.0.0.1:18193/graphql --auth gateway \
//	         --pid gateway=PID --admin gateway=http://127.0.0.1:18195 --shapes 1x1,50x100,5000x1
//
// The bearer key for --auth targets comes from SUBSLOAD_BEARER and is never
// printed. The engine runs without an identity secret (it accepts the
// gateway's X-Civic-Identity without checking it), so both targets reach the
// same engine code.
package main

import (
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

const subscribeQuery = `subscription { loanEvents { kind loan { id due } } }`

type target struct {
	name, url string
	auth      bool
	pid       int
	admin     string
}

type shape struct{ sockets, subs int }

func (s shape) String() string { return fmt.Sprintf("%d×%d", s.sockets, s.subs) }

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

type config struct {
	engine   string
	targets  []target
	shapes   []shape
	events   int
	interval time.Duration
	settle   time.Duration
	rounds   int
	bearer   string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "subsload:", err)
		os.Exit(1)
	}
}

func parse(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("subsload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var targets, auths, pids, admins listFlag
	engine := fs.String("engine", "127.0.0.1:18191", "address the in-process engine listens on")
	fs.Var(&targets, "target", "name=ws://… (repeat; run in this order each round)")
	fs.Var(&auths, "auth", "target that gets Authorization: Bearer $SUBSLOAD_BEARER on the upgrade")
	fs.Var(&pids, "pid", "target=PID of the proxy process whose RSS and CPU are measured")
	fs.Var(&admins, "admin", "target=http://admin of that proxy (pprof heap?gc=1 and /metrics)")
	shapes := fs.String("shapes", "1x1,50x100,5000x1", "comma-separated SOCKETSxSUBS")
	events := fs.Int("events", 20, "events published per cell")
	interval := fs.Duration("interval", 50*time.Millisecond, "pause after an event reached every subscriber, before the next")
	settle := fs.Duration("settle", time.Second, "wait after the subscriptions are open before measuring memory")
	rounds := fs.Int("rounds", 1, "rounds (each runs every shape on every target)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	cfg := config{engine: *engine, events: *events, interval: *interval, settle: *settle, rounds: *rounds}
	kv := func(l listFlag, what string) (map[string]string, error) {
		m := map[string]string{}
		for _, s := range l {
			k, v, ok := strings.Cut(s, "=")
			if !ok || k == "" || v == "" {
				return nil, fmt.Errorf("--%s %q: want name=value", what, s)
			}
			m[k] = v
		}
		return m, nil
	}
	pm, err := kv(pids, "pid")
	if err != nil {
		return cfg, err
	}
	am, err := kv(admins, "admin")
	if err != nil {
		return cfg, err
	}
	for _, t := range targets {
		name, url, ok := strings.Cut(t, "=")
		if !ok || !strings.HasPrefix(url, "ws") {
			return cfg, fmt.Errorf("--target %q: want name=ws://…", t)
		}
		tg := target{name: name, url: url, auth: slices.Contains(auths, name), admin: am[name]}
		if p := pm[name]; p != "" {
			if tg.pid, err = strconv.Atoi(p); err != nil {
				return cfg, fmt.Errorf("--pid %s=%q", name, p)
			}
		}
		cfg.targets = append(cfg.targets, tg)
	}
	if len(cfg.targets) == 0 {
		return cfg, errors.New("at least one --target")
	}
	for _, s := range strings.Split(*shapes, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(s), "x")
		n, err1 := strconv.Atoi(a)
		k, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || n < 1 || k < 1 {
			return cfg, fmt.Errorf("--shapes %q: want SOCKETSxSUBS", s)
		}
		cfg.shapes = append(cfg.shapes, shape{n, k})
	}
	if len(auths) > 0 {
		if cfg.bearer = os.Getenv("SUBSLOAD_BEARER"); cfg.bearer == "" {
			return cfg, errors.New("--auth needs SUBSLOAD_BEARER")
		}
	}
	if cfg.events < 1 || cfg.rounds < 1 {
		return cfg, errors.New("--events and --rounds must be ≥ 1")
	}
	return cfg, nil
}

// result is one cell: one target, one shape, one round.
type result struct {
	target        string
	shape         shape
	openTime      time.Duration
	got, want     int64
	bad           int64
	p50, p99, max time.Duration
	rssBefore     int64 // bytes
	rssAfter      int64
	heapBefore    int64 // heap_inuse+stack_inuse after a forced GC
	heapAfter     int64
	gorBefore     int64
	gorAfter      int64
	cpu           time.Duration // proxy CPU during publication and delivery
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parse(args, stderr)
	if err != nil {
		return err
	}
	events := library.NewLoanEvents()
	ln, err := net.Listen("tcp", cfg.engine)
	if err != nil {
		return fmt.Errorf("engine listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/graphql", library.NewHandler(library.NewCatalog(), events, library.Options{KeepAlive: time.Minute}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	var results []result
	for r := range cfg.rounds {
		for _, sh := range cfg.shapes {
			for _, t := range cfg.targets {
				fmt.Fprintf(stderr, "subsload: round %d %s %s\n", r+1, t.name, sh)
				res, err := cell(ctx, cfg, t, sh, events)
				if err != nil {
					return fmt.Errorf("%s %s: %w", t.name, sh, err)
				}
				fmt.Fprintf(stderr, "subsload:   got %d/%d p50 %v p99 %v max %v rss %+d KiB heap %+d KiB cpu %v\n",
					res.got, res.want, res.p50, res.p99, res.max, (res.rssAfter-res.rssBefore)>>10,
					(res.heapAfter-res.heapBefore)>>10, res.cpu)
				results = append(results, res)
			}
		}
	}
	report(stdout, cfg, results)
	return nil
}

func cell(ctx context.Context, cfg config, t target, sh shape, events *library.LoanEvents) (result, error) {
	res := result{target: t.name, shape: sh}
	total := sh.sockets * sh.subs
	b := &bench{published: make([]atomic.Int64, cfg.events), lat: make([]int64, total*cfg.events)}
	base := events.Subscribers()
	if base != 0 {
		return res, fmt.Errorf("%d subscriptions still open on the engine", base)
	}
	var err error
	if res.rssBefore, res.heapBefore, res.gorBefore, err = memory(t); err != nil {
		return res, err
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	socks := make([]*socket, sh.sockets)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, sh.sockets)
	sem := make(chan struct{}, 64) // dial at most 64 at a time
	for i := range socks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			s, err := open(cctx, t, cfg.bearer, sh.subs, b)
			if err != nil {
				errs <- err
				return
			}
			socks[i] = s
		}()
	}
	wg.Wait()
	closeAll := func() {
		for _, s := range socks {
			if s != nil {
				_ = s.c.CloseNow()
			}
		}
	}
	defer closeAll()
	select {
	case err := <-errs:
		return res, err
	default:
	}
	deadline := time.Now().Add(60 * time.Second)
	for events.Subscribers() < total {
		if time.Now().After(deadline) {
			return res, fmt.Errorf("engine holds %d of %d subscriptions after 60 s", events.Subscribers(), total)
		}
		time.Sleep(10 * time.Millisecond)
	}
	res.openTime = time.Since(start)
	time.Sleep(cfg.settle)
	if res.rssAfter, res.heapAfter, res.gorAfter, err = memory(t); err != nil {
		return res, err
	}

	cpu0, _ := procCPU(t.pid)
	for seq := range cfg.events {
		b.published[seq].Store(time.Now().UnixNano())
		events.Publish(&library.LoanEvent{Kind: library.LoanEventKindBorrowed,
			Loan: &library.Loan{ID: "ev-" + strconv.Itoa(seq), MemberID: "m1", BookID: "b1", Due: "2026-12-01"}})
		// The next event goes out once this one reached every subscriber (or
		// 10 s passed), so latencies are one fan-out each, not a backlog.
		wait := time.Now().Add(10 * time.Second)
		for b.n.Load() < int64((seq+1)*total) && time.Now().Before(wait) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(cfg.interval)
	}
	res.want = int64(total * cfg.events)
	deadline = time.Now().Add(30 * time.Second)
	for b.n.Load() < res.want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cpu1, _ := procCPU(t.pid)
	res.cpu = cpu1 - cpu0
	res.got = min(b.n.Load(), res.want)
	res.bad = b.bad.Load()
	lat := b.lat[:res.got]
	slices.Sort(lat)
	if len(lat) > 0 {
		res.p50 = time.Duration(lat[len(lat)/2])
		res.p99 = time.Duration(lat[min(len(lat)-1, len(lat)*99/100)])
		res.max = time.Duration(lat[len(lat)-1])
	}
	closeAll()
	deadline = time.Now().Add(30 * time.Second)
	for events.Subscribers() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return res, nil
}
