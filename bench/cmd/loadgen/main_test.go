package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// graphqlServer answers every POST like recordsd answers { __typename }, and
// counts requests and the bearer tokens it saw.
func graphqlServer(t *testing.T, status int, bearers *atomic.Int64) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Header.Get("Authorization") == "Bearer cg_live_smoke" {
			bearers.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"data":{"__typename":"Query"}}`))
	}))
	t.Cleanup(s.Close)
	return s
}

func getenv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// The whole program against two tiny in-process servers: every cell ran,
// nothing failed, the report has ratios first, and the key never appears.
func TestLoadgenSmoke(t *testing.T) {
	var bearers atomic.Int64
	a, b := graphqlServer(t, 200, &bearers), graphqlServer(t, 200, &bearers)
	var out, log bytes.Buffer
	args := []string{"--mix", "light", "--rounds", "2", "--duration", "150ms", "--warmup", "20ms", "--conns", "1,2",
		"--target", "bare=" + a.URL, "--target", "gateway=" + b.URL, "--auth", "gateway",
		"--proc", "self=" + strconv.Itoa(os.Getpid())}
	if err := run(context.Background(), args, &out, &log, getenv(map[string]string{"LOADGEN_BEARER": "cg_live_smoke"})); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	report := out.String()
	if bearers.Load() == 0 {
		t.Fatal("the --auth target never got the bearer key")
	}
	if strings.Contains(report+log.String(), "cg_live_smoke") {
		t.Fatal("the bearer key was printed")
	}
	ratios := strings.Index(report, "| throughput gateway / bare | 2 |")
	medians := strings.Index(report, "Medians over rounds")
	if ratios < 0 || medians < 0 || ratios > medians {
		t.Fatalf("ratios do not come first:\n%s", report)
	}
	for _, want := range []string{"| gateway errors (all rounds) | 2 | 0 | 0 | **met** |", "CPU µs/req self", "| bare | 1 |", "| gateway | 2 |"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if n := strings.Count(log.String(), "round "); n != 2*2*2 {
		t.Errorf("%d cells logged, want 8:\n%s", n, log.String())
	}
}

// A target that answers errors is reported (and refused by the pre-check).
func TestLoadgenRefusesBrokenTarget(t *testing.T) {
	var bearers atomic.Int64
	ok, broken := graphqlServer(t, 200, &bearers), graphqlServer(t, 500, &bearers)
	cfg, err := parseFlags([]string{"--mix", "light", "--target", "ok=" + ok.URL, "--target", "broken=" + broken.URL},
		io.Discard, getenv(nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := checkTargets(ctx, cfg); err == nil || !strings.Contains(err.Error(), "HTTP 500") {
		t.Fatalf("check of a 500 target: %v", err)
	}
	cfg.duration, cfg.warmup = 100*time.Millisecond, 0
	c, err := measure(ctx, cfg, cfg.targets[1], 1)
	if err != nil {
		t.Fatal(err)
	}
	if c.errors == 0 || c.requests != 0 || !strings.Contains(c.firstErr, "HTTP 500") {
		t.Fatalf("errors %d, requests %d, first %q", c.errors, c.requests, c.firstErr)
	}
}

func TestParseFlagsRefusals(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--target", "x"},
		{"--target", "a=http://x", "--target", "a=http://y"},
		{"--target", "a=http://x", "--auth", "a"}, // no LOADGEN_BEARER
		{"--target", "a=http://x", "--auth", "b"},
		{"--target", "a=http://x", "--proc", "p=0"},
		{"--target", "a=http://x", "--conns", "0"},
		{"--target", "a=http://x", "--mix", "nope"},
	} {
		if _, err := parseFlags(args, io.Discard, getenv(nil)); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

func TestCountersAndStatistics(t *testing.T) {
	n, err := sumCommandStats("# Commandstats\r\ncmdstat_evalsha:calls=7,usec=1,usec_per_call=0.1\r\ncmdstat_info:calls=99,usec=1\r\ncmdstat_get:calls=3,usec=2\r\n")
	if err != nil || n != 10 {
		t.Fatalf("sumCommandStats = %d, %v; want 10 (INFO excluded)", n, err)
	}
	if _, err := procCPU("/proc/self/stat"); err != nil {
		t.Fatal(err)
	}
	if _, err := procCPU("/proc/0/stat"); err == nil {
		t.Fatal("no error for a missing process")
	}
	lat := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if p := percentile(lat, 0.5); p != 5 {
		t.Fatalf("p50 = %v", p)
	}
	if p := percentile(lat, 0.99); p != 10 {
		t.Fatalf("p99 = %v", p)
	}
	if m := median([]float64{3, 1, 2, 10}); m != 2.5 {
		t.Fatalf("median = %v", m)
	}
	m, err := recordsMix()
	if err != nil || len(m) != 5 {
		t.Fatalf("records mix: %d, %v", len(m), err)
	}
}

// The polling mix is 50 distinct documents; --ratio checks its targets and goal.
func TestPollingMixAndRatios(t *testing.T) {
	m, err := pollingMix()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range m {
		seen[string(r.body)] = true
	}
	if len(m) != 50 || len(seen) != 50 {
		t.Fatalf("polling mix: %d requests, %d distinct; want 50, 50", len(m), len(seen))
	}
	targets := map[string]bool{"cached": true, "bare": true}
	r, err := parseRatio("cached/bare>=3", targets)
	if err != nil || r != (ratio{cand: "cached", base: "bare", goal: 3}) {
		t.Fatalf("parseRatio: %+v, %v", r, err)
	}
	for _, bad := range []string{"cached", "cached/nope", "cached/cached", "cached/bare>=x", "cached/bare>=0"} {
		if _, err := parseRatio(bad, targets); err == nil {
			t.Errorf("parseRatio(%q) accepted", bad)
		}
	}
}

// bearerServer answers like graphqlServer and counts every bearer value.
func bearerServer(t *testing.T, seen *sync.Map) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			n, _ := seen.LoadOrStore(v, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":{"__typename":"Query"}}`))
	}))
	t.Cleanup(s.Close)
	return s
}

func tokenFile(t *testing.T, tokens ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(p, []byte(strings.Join(tokens, "\n")+"\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A --bearer-file target cycles through every token of its file, the key
// target keeps its key, no value is printed, and --summary gets one headed
// row per goal ratio under the run's label.
func TestBearerFileCyclesTokens(t *testing.T) {
	var seen sync.Map
	bare, gw := bearerServer(t, &seen), bearerServer(t, &seen)
	tokens := []string{"tok.one.aaa", "tok.two.bbb", "tok.three.ccc"}
	summary := filepath.Join(t.TempDir(), "summary.md")
	var out, log bytes.Buffer
	args := []string{"--mix", "light", "--rounds", "2", "--duration", "100ms", "--warmup", "10ms", "--conns", "1,2",
		"--target", "bare=" + bare.URL, "--target", "gateway=" + gw.URL, "--target", "gateway-jwt=" + gw.URL,
		"--auth", "gateway", "--bearer-file", "gateway-jwt=" + tokenFile(t, tokens...),
		"--compare", "gateway-jwt", "--ratio", "gateway/bare>=0.9", "--ratio", "gateway-jwt/gateway",
		"--label", "light-jwt", "--summary", summary,
		"--proc", "gateway=" + strconv.Itoa(os.Getpid()), "--proc", "bare=" + strconv.Itoa(os.Getpid())}
	if err := run(context.Background(), args, &out, &log, getenv(map[string]string{"LOADGEN_BEARER": "cg_live_smoke"})); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	for _, v := range append(tokens, "cg_live_smoke") {
		n, ok := seen.Load(v)
		if !ok || n.(*atomic.Int64).Load() < 2 {
			t.Errorf("bearer %q sent %v times, want several", v, n)
		}
		if strings.Contains(out.String()+log.String(), v) {
			t.Errorf("bearer %q printed", v)
		}
	}
	report := out.String()
	for _, want := range []string{"`light-jwt`: the requests of mix `light`", "`gateway-jwt` 3 distinct bearer values",
		"`gateway` one bearer value", "| throughput gateway-jwt / bare | 2 |"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(rows) != 4 || !strings.HasPrefix(rows[0], "| run | rounds | ratio |") ||
		!strings.HasPrefix(rows[2], "| light-jwt | 2 | gateway-jwt ÷ bare | ") || !strings.HasPrefix(rows[3], "| light-jwt | 2 | gateway ÷ bare | ") {
		t.Fatalf("summary: want a header and the two goal ratios, got\n%s", b)
	}
	if strings.Contains(rows[2], "| — |") {
		t.Errorf("gateway-jwt has no CPU over bare, though the gateway process serves it:\n%s", rows[2])
	}
}

// With --bearer-once no token is sent twice, and once the file is used up
// requests fail as errors rather than reuse a token.
func TestBearerOnceNeverRepeats(t *testing.T) {
	var seen sync.Map
	gw := bearerServer(t, &seen)
	var tokens []string
	for i := range 40 {
		tokens = append(tokens, "tok.once."+strconv.Itoa(i))
	}
	cfg, err := parseFlags([]string{"--mix", "light", "--target", "gw=" + gw.URL, "--bearer-file", "gw=" + tokenFile(t, tokens...),
		"--bearer-once"}, io.Discard, getenv(nil))
	if err != nil {
		t.Fatal(err)
	}
	cfg.duration, cfg.warmup = 200*time.Millisecond, 0
	c, err := measure(context.Background(), cfg, cfg.targets[0], 2)
	if err != nil {
		t.Fatal(err)
	}
	sent := 0
	seen.Range(func(k, v any) bool {
		sent++
		if n := v.(*atomic.Int64).Load(); n != 1 {
			t.Errorf("token %v sent %d times", k, n)
		}
		return true
	})
	if sent != 40 || c.errors == 0 || !strings.Contains(c.firstErr, "every first-seen token has been sent") {
		t.Fatalf("%d tokens sent, %d errors (first %q); want all 40 once, then errors", sent, c.errors, c.firstErr)
	}
}

func TestBearerFlagRefusals(t *testing.T) {
	good := tokenFile(t, "a.b.c")
	for _, args := range [][]string{
		{"--target", "a=http://x", "--bearer-file", "a"},
		{"--target", "a=http://x", "--bearer-file", "b=" + good},
		{"--target", "a=http://x", "--bearer-file", "a=" + filepath.Join(t.TempDir(), "missing")},
		{"--target", "a=http://x", "--bearer-file", "a=" + tokenFile(t, "")},
		{"--target", "a=http://x", "--bearer-file", "a=" + tokenFile(t, "two tokens")},
		{"--target", "a=http://x", "--bearer-once"},
	} {
		if _, err := parseFlags(args, io.Discard, getenv(nil)); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
	_, err := parseFlags([]string{"--target", "a=http://x", "--bearer-file", "a=" + good, "--bearer-file", "a=" + good}, io.Discard, getenv(nil))
	if err == nil || strings.Contains(err.Error(), "a.b.c") {
		t.Errorf("two files for one target: %v", err)
	}
}

// A target's CPU is its own process's, else that of the name before its
// last "-" (gateway-jwt is served by gateway).
func TestProcOf(t *testing.T) {
	cfg := config{procs: []proc{{name: "gateway", pid: 1}, {name: "bare", pid: 2}, {name: "gateway-b", pid: 3}}}
	for target, want := range map[string]string{"gateway": "gateway", "gateway-jwt": "gateway", "gateway-jwt-new": "gateway",
		"gateway-b": "gateway-b", "bare": "bare", "direct": "direct", "x-y": "x-y"} {
		if got := procOf(cfg, target); got != want {
			t.Errorf("procOf(%q) = %q, want %q", target, got, want)
		}
	}
}
