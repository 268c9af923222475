// Command loadgen runs the same GraphQL request mix against several HTTP
// targets (recordsd directly, a bare Caddy reverse_proxy, the full gateway),
// interleaved A B C A B C for a number of rounds at each connection count, and
// prints a Markdown report: ratios of one target to another first, then the
// medians over rounds of requests per second, p50/p99 latency, errors, CPU
// microseconds per request of each named process (from /proc/<pid>/stat) and
// Redis commands per request (INFO commandstats). Run by bench/run.sh side-by-side (make bench).
//
//	loadgen --target direct=http://127.0.0.1:18081/graphql --target bare=http://127.0.0.1:18082/v1/graphql \
//	        --target gateway=http://127.0.0.1:18083/v1/graphql --auth gateway --proc recordsd=PID ... \
//	        --redis 127.0.0.1:18086 --conns 1,16 --rounds 5 --duration 4s --warmup 1s
//
// The bearer key for --auth targets is read from the environment variable
// LOADGEN_BEARER and is never printed. A --bearer-file target sends access
// tokens instead, one line of the file per request, cycled (a warm
// verification cache); with --bearer-once each token is sent once in the whole
// run (every request brings a token the gateway has not verified before).
// --label names the run in the report and in the --summary rows, which
// bench/side-by-side.sh gathers into one table of every mix's ratios.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// config is everything one run needs.
type config struct {
	targets  []target
	procs    []proc
	redis    string
	conns    []int
	rounds   int
	duration time.Duration
	warmup   time.Duration
	mix      []request
	mixName  string
	label    string // the run's name in the report and --summary (default: mixName)
	baseline string // ratios: candidate / baseline
	compare  string
	ratios   []ratio // extra ratio rows (--ratio)
	summary  string  // file the summary rows are appended to ("": none)
}

// ratio is one --ratio cand/base[>=goal]: cand's throughput over base's, per
// round, with an optional goal for the throughput ratio (0: none).
type ratio struct {
	cand, base string
	goal       float64
}

type target struct {
	name    string
	url     string
	bearers *bearers // nil: no Authorization header
}

type proc struct {
	name string
	pid  int
}

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer, getenv func(string) string) (config, error) {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var targets, auths, procs listFlag
	fs.Var(&targets, "target", "name=URL of a target (repeat; order = interleaving order)")
	fs.Var(&auths, "auth", "name of a target that gets Authorization: Bearer $LOADGEN_BEARER (repeat)")
	var bearerFiles listFlag
	fs.Var(&bearerFiles, "bearer-file", "name=PATH: the target sends the tokens of PATH (one a line), cycled per request (repeat)")
	bearerOnce := fs.Bool("bearer-once", false, "send each --bearer-file token once in the whole run (first-seen tokens); a request after the last fails")
	label := fs.String("label", "", "the run's name in the report and the --summary rows (default: the mix)")
	summary := fs.String("summary", "", "append one Markdown row per goal ratio (the compare/baseline pair and each --ratio with a goal) to this file")
	fs.Var(&procs, "proc", "name=PID of a process whose CPU time is measured (repeat)")
	var ratios listFlag
	fs.Var(&ratios, "ratio", "cand/base[>=goal]: also report cand ÷ base throughput and latency, with an optional throughput goal (repeat)")
	redisAddr := fs.String("redis", "", "host:port of the Redis whose INFO commandstats is measured (optional)")
	conns := fs.String("conns", "1,16", "comma-separated connection counts")
	rounds := fs.Int("rounds", 5, "rounds (each round runs every target at every connection count)")
	duration := fs.Duration("duration", 4*time.Second, "measured time per target, connection count and round")
	warmup := fs.Duration("warmup", time.Second, "unmeasured time before each measurement")
	mix := fs.String("mix", "records", "request mix: records (one page of each family), light ({ __typename }) or polling (50 repeated pages)")
	baseline := fs.String("baseline", "bare", "ratio denominator target")
	compare := fs.String("compare", "gateway", "ratio numerator target")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() != 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg := config{redis: *redisAddr, rounds: *rounds, duration: *duration, warmup: *warmup, mixName: *mix,
		label: *label, baseline: *baseline, compare: *compare, summary: *summary}
	if cfg.label == "" {
		cfg.label = *mix
	}
	sources, err := bearerSources(auths, bearerFiles, *bearerOnce, getenv)
	if err != nil {
		return config{}, err
	}
	seen := map[string]bool{}
	for _, t := range targets {
		name, url, ok := strings.Cut(t, "=")
		if !ok || name == "" || !strings.HasPrefix(url, "http") {
			return config{}, fmt.Errorf("--target %q: want name=http://…", t)
		}
		if seen[name] {
			return config{}, fmt.Errorf("--target %q given twice", name)
		}
		seen[name] = true
		cfg.targets = append(cfg.targets, target{name: name, url: url, bearers: sources[name]})
	}
	if len(cfg.targets) == 0 {
		return config{}, errors.New("at least one --target is required")
	}
	for a := range sources {
		if !seen[a] {
			return config{}, fmt.Errorf("--auth or --bearer-file %q names no target", a)
		}
	}
	for _, r := range ratios {
		rt, err := parseRatio(r, seen)
		if err != nil {
			return config{}, err
		}
		cfg.ratios = append(cfg.ratios, rt)
	}
	for _, p := range procs {
		name, pidText, ok := strings.Cut(p, "=")
		pid, err := strconv.Atoi(pidText)
		if !ok || name == "" || err != nil || pid <= 0 {
			return config{}, fmt.Errorf("--proc %q: want name=PID", p)
		}
		cfg.procs = append(cfg.procs, proc{name: name, pid: pid})
	}
	for _, c := range strings.Split(*conns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 || n > 1024 {
			return config{}, fmt.Errorf("--conns %q: want positive integers", *conns)
		}
		cfg.conns = append(cfg.conns, n)
	}
	if cfg.rounds < 1 || cfg.duration <= 0 || cfg.warmup < 0 {
		return config{}, errors.New("--rounds ≥ 1 and --duration > 0 are required")
	}
	switch *mix {
	case "records":
		m, err := recordsMix()
		if err != nil {
			return config{}, err
		}
		cfg.mix = m
	case "light":
		cfg.mix = lightMix()
	case "polling":
		m, err := pollingMix()
		if err != nil {
			return config{}, err
		}
		cfg.mix = m
	default:
		return config{}, fmt.Errorf("--mix %q: want records, light or polling", *mix)
	}
	return cfg, nil
}

// bearerSources maps each --auth target to the key of LOADGEN_BEARER and
// each --bearer-file target to the tokens of its file.
func bearerSources(auths, files listFlag, once bool, getenv func(string) string) (map[string]*bearers, error) {
	out := map[string]*bearers{}
	for _, a := range auths {
		key := getenv("LOADGEN_BEARER")
		if key == "" {
			return nil, errors.New("--auth needs the key in LOADGEN_BEARER")
		}
		out[a] = &bearers{values: []string{key}}
	}
	for _, f := range files {
		name, path, ok := strings.Cut(f, "=")
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("--bearer-file %q: want name=PATH", f)
		}
		if out[name] != nil {
			return nil, fmt.Errorf("--bearer-file %q: the target already has a bearer", name)
		}
		tokens, err := readBearerFile(path)
		if err != nil {
			return nil, err
		}
		out[name] = &bearers{values: tokens, once: once}
	}
	if once && len(files) == 0 {
		return nil, errors.New("--bearer-once needs a --bearer-file")
	}
	return out, nil
}

// parseRatio reads cand/base[>=goal]; both names must be targets.
func parseRatio(s string, targets map[string]bool) (ratio, error) {
	spec, goalText, hasGoal := strings.Cut(s, ">=")
	cand, base, ok := strings.Cut(spec, "/")
	if !ok || !targets[cand] || !targets[base] || cand == base {
		return ratio{}, fmt.Errorf("--ratio %q: want cand/base[>=goal] with two different targets", s)
	}
	r := ratio{cand: cand, base: base}
	if hasGoal {
		g, err := strconv.ParseFloat(goalText, 64)
		if err != nil || g <= 0 {
			return ratio{}, fmt.Errorf("--ratio %q: the goal must be a positive number", s)
		}
		r.goal = g
	}
	return r, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	cfg, err := parseFlags(args, stderr, getenv)
	if err != nil {
		return err
	}
	res, err := bench(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	if err := writeReport(stdout, cfg, res); err != nil {
		return err
	}
	return appendSummary(cfg, res)
}
