// Command subsload measures graphql-transport-ws subscriptions through
// proxies against the same subscriptions made directly to the engine. It runs
// the example library engine (examples/other-backend/library) as a child
// process of its own (`subsload engine`, engine.go), which timestamps each
// event as it publishes it and counts the subscriptions it holds; for each
// shape NAME=SOCKETSxSUBS it opens SOCKETS sockets with SUBS identical
// loanEvents subscriptions each to every target in turn, publishes warm-up
// events until one reached every subscription, measures the proxy's memory
// (VmRSS and, after a forced GC, Go heap+stack in use from its admin
// endpoint), then publishes the events and reports per-receipt latency
// (engine publish → the client has read the "next" frame), the latency of
// each event's last receipt, the engine's subscription count, and the
// proxy's and the engine's CPU per delivered message. `subsload floor`
// measures what a frame costs the writing process before any proxy code runs
// (floor.go). Run by bench/subscriptions.sh (bench/run.sh subscriptions).
//
//	subsload --engine 127.0.0.1:18291 --target direct=ws://127.0.0.1:18291/graphql \
//	         --target gateway=ws://127.0.0.1:18293/graphql --auth gateway \
//	         --pid gateway=PID --admin gateway=http://127.0.0.1:18295 \
//	         --shapes single=1x1,fanout=5000x1,sockets=10000x1
//
// The bearer key for --auth targets comes from SUBSLOAD_BEARER and is never
// printed. The engine runs without an identity secret (it accepts the
// gateway's X-Civic-Identity without checking it), so every target reaches
// the same engine code.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// subscribeQuery is every subscription of every shape: one document, no
// variables, so that a proxy that shares identical subscriptions can.
const subscribeQuery = `subscription { loanEvents { kind loan { id due } } }`

type target struct {
	name, url string
	auth      bool
	pid       int
	admin     string
}

// shape is SOCKETS sockets with SUBS subscriptions each, all of the same
// document: named single, fanout, sockets… in the report; events, when not 0,
// replaces --events for it.
type shape struct {
	name                  string
	sockets, subs, events int
}

func (s shape) dims() string { return fmt.Sprintf("%d×%d", s.sockets, s.subs) }

func (s shape) String() string {
	if s.name == "" {
		return s.dims()
	}
	return s.name + " " + s.dims()
}

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
	baseline string
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
	var targets, auths, pids, admins, bases listFlag
	engine := fs.String("engine", "127.0.0.1:18191", "address the in-process engine listens on")
	fs.Var(&targets, "target", "name=ws://… (repeat; run in this order each round)")
	fs.Var(&auths, "auth", "target that gets Authorization: Bearer $SUBSLOAD_BEARER on the upgrade")
	fs.Var(&pids, "pid", "target=PID of the proxy process whose RSS and CPU are measured")
	fs.Var(&admins, "admin", "target=http://admin of that proxy (pprof heap?gc=1 and /metrics)")
	fs.Var(&bases, "baseline", "target the others' latency is compared with (default: the first)")
	shapes := fs.String("shapes", "single=1x1,fanout=5000x1,sockets=10000x1", "comma-separated [NAME=]SOCKETSxSUBS[:EVENTS]")
	events := fs.Int("events", 20, "events published per cell (unless its shape says :EVENTS)")
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
		name, dims, ok := strings.Cut(strings.TrimSpace(s), "=")
		if !ok {
			name, dims = "", name
		}
		dims, evs, hasEvents := strings.Cut(dims, ":")
		a, b, ok := strings.Cut(dims, "x")
		n, err1 := strconv.Atoi(a)
		k, err2 := strconv.Atoi(b)
		e, err3 := 0, error(nil)
		if hasEvents {
			if e, err3 = strconv.Atoi(evs); err3 == nil && e < 1 {
				err3 = errors.New("events < 1")
			}
		}
		if !ok || err1 != nil || err2 != nil || err3 != nil || n < 1 || k < 1 {
			return cfg, fmt.Errorf("--shapes %q: want [NAME=]SOCKETSxSUBS[:EVENTS]", s)
		}
		cfg.shapes = append(cfg.shapes, shape{name, n, k, e})
	}
	cfg.baseline = cfg.targets[0].name
	if len(bases) > 0 {
		cfg.baseline = bases[len(bases)-1]
		if !slices.ContainsFunc(cfg.targets, func(t target) bool { return t.name == cfg.baseline }) {
			return cfg, fmt.Errorf("--baseline %q is not a --target", cfg.baseline)
		}
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

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "engine":
			return runEngine(ctx, args[1:], stderr)
		case "floor":
			return runFloor(ctx, args[1:], stdout, stderr)
		case "sink":
			return runSink(ctx, stdout)
		}
	}
	cfg, err := parse(args, stderr)
	if err != nil {
		return err
	}
	eng, err := startEngine(ctx, cfg.engine, stderr)
	if err != nil {
		return err
	}
	defer eng.stop()

	var results []result
	failed := 0
	for r := range cfg.rounds {
		for _, sh := range cfg.shapes {
			for _, t := range cfg.targets {
				fmt.Fprintf(stderr, "subsload: round %d %s %s\n", r+1, t.name, sh)
				res := cell(ctx, cfg, t, sh, eng)
				if res.err != "" {
					failed++
					fmt.Fprintf(stderr, "subsload:   failed: %s\n", res.err)
				}
				fmt.Fprintf(stderr, "subsload:   got %d/%d p50 %v p99 %v last p99 %v engine subs %d rss %+d KiB heap %+d KiB cpu %v\n",
					res.got, res.want, res.p50, res.p99, res.last99, res.engineSubs, (res.rssAfter-res.rssBefore)>>10,
					(res.heapAfter-res.heapBefore)>>10, res.cpu)
				results = append(results, res)
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
		}
	}
	report(stdout, cfg, results)
	if failed > 0 {
		return fmt.Errorf("%d of %d cells failed (see the report)", failed, len(results))
	}
	return nil
}
