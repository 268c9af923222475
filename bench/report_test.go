package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The tests of bench/report.sh, which records each suite's run: its rows of
// the front page BENCHMARKS.md and its full report in docs/benchmarks-log.md.
// Synthetic reports in the formats the suites print; no service is needed.

const frontPage = `# Benchmarks

| suite | figure | today | baseline, same run | date, machine | command |
|---|---|---|---|---|---|
| ` + "`side-by-side`" + ` | old ratio, records | **0.5** | bare | 2020-01-01 | x |
| ` + "`side-by-side`" + ` | old ratio, light | **0.6** | bare | 2020-01-01 | x |
| ` + "`backend`" + ` | first page | 9 ms | deep | 2020-01-01 | y |
| — | by hand | 1 | 2 | 2020-01-01 | z |

## How to read
`

const sideBySideReport = `## Side by side: gateway vs bare Caddy vs direct

Setup text.

### Every mix

| run | rounds | ratio | throughput, max conns | goal | verdict | throughput, min conns | added p50, min conns | added p99, min conns | p99 ratio, max conns | proxy CPU µs/req over base, max conns | candidate errors |
|---|---:|---|---:|---|---|---:|---:|---:|---:|---:|---:|
| records | 10 | gateway ÷ bare | 1.006 (16) | ≥ 0.9 | **met** | 0.927 (1) | +80 µs | +716 µs | 1.016 | +26 | 0 |
| light | 10 | gateway ÷ bare | 0.841 (16) | ≥ 0.9 | **missed** | 0.918 (1) | +42 µs | -183 µs | 1.107 | +24 | 0 |
`

// recordReport runs bench/report.sh on copies of the front page and a log in
// a temporary directory and returns both files' text afterwards.
func recordReport(t *testing.T, suite, report string, env ...string) (front, log string) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"front.md": frontPage, "log.md": "# Benchmarks log\n", "report.txt": report}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("bash", "report.sh", suite, filepath.Join(dir, "report.txt"))
	cmd.Env = append(os.Environ(), "BENCH_FRONT="+filepath.Join(dir, "front.md"), "BENCH_LOG="+filepath.Join(dir, "log.md"),
		"BENCH_DATE=2026-12-07 10:00 UTC", "BENCH_MACHINE=2 cores (Test CPU)", "BENCH_COMMAND=make bench BENCH="+suite, "BENCH_WRITE=1")
	cmd.Env = append(cmd.Env, env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("report.sh %s: %v\n%s", suite, err, out)
	}
	f, err := os.ReadFile(filepath.Join(dir, "front.md"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := os.ReadFile(filepath.Join(dir, "log.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(f), string(l)
}

// TestReportRewritesTheSuitesRows: the side-by-side suite's rows are
// replaced, where they stood, by rows made from its summary; every other
// line of the page stays; the report goes to the log under a dated heading,
// its own headings one level down.
func TestReportRewritesTheSuitesRows(t *testing.T) {
	front, log := recordReport(t, "side-by-side", sideBySideReport)
	want := strings.Replace(frontPage,
		"| `side-by-side` | old ratio, records | **0.5** | bare | 2020-01-01 | x |\n| `side-by-side` | old ratio, light | **0.6** | bare | 2020-01-01 | x |\n",
		"| `side-by-side` | gateway ÷ bare, throughput, mix `records`, 16 connections | **1.006** (goal ≥ 0.9: met) | bare in the same rounds; added p50 +80 µs, p99 +716 µs at 1 connection(s); proxy CPU +26 µs/req over bare | 2026-12-07 10:00 UTC; 2 cores (Test CPU) | `make bench BENCH=side-by-side` |\n"+
			"| `side-by-side` | gateway ÷ bare, throughput, mix `light`, 16 connections | **0.841** (goal ≥ 0.9: missed) | bare in the same rounds; added p50 +42 µs, p99 -183 µs at 1 connection(s); proxy CPU +24 µs/req over bare | 2026-12-07 10:00 UTC; 2 cores (Test CPU) | `make bench BENCH=side-by-side` |\n", 1)
	if front != want {
		t.Errorf("front page:\n%s\nwant:\n%s", front, want)
	}
	for _, line := range []string{
		"# Benchmarks log\n\n## side-by-side (2026-12-07 10:00 UTC)\n\nCommand: `make bench BENCH=side-by-side`. Machine: 2 cores (Test CPU).\n\n",
		"\n### Side by side: gateway vs bare Caddy vs direct\n",
		"\n#### Every mix\n",
		"| light | 10 | gateway ÷ bare | 0.841 (16) |",
	} {
		if !strings.Contains(log, line) {
			t.Errorf("log lacks %q:\n%s", line, log)
		}
	}
}

// TestReportAddsAndParses: each suite whose summary the script reads gets
// its rows — added at the end of the table on a suite's first run — from the
// format that suite prints.
func TestReportAddsAndParses(t *testing.T) {
	for _, c := range []struct{ suite, report, row string }{
		{"gateway", "goos: linux\nBenchmarkChain/bare-2   \t  150000\t      7956 ns/op\t   10322 B/op\t      83 allocs/op\n" +
			"BenchmarkChain/gateway-2\t   80000\t     14666 ns/op\t   12132 B/op\t      96 allocs/op\n" +
			"BenchmarkChain/gateway-2\t   80000\t     99999 ns/op\t   12132 B/op\t      96 allocs/op\n" +
			"BenchmarkRedisRoundTrips/one_key-2\t1\t2000000000 ns/op\t         1.000 admitted/op\t         1.000 redis-calls/1000-admitted\n" +
			"BenchmarkRedisRoundTrips/1000_keys-2\t1\t10000000000 ns/op\t         50.00 redis-calls/1000-admitted\nPASS\n",
			"| `gateway` | allocations the policy chain adds per request (civic_auth → civic_rate_limit → graphql_guard, in-process `BenchmarkChain`) | **+13** (96 allocs, 12132 B, 14666 ns) | the bare route on the same provisioned server: 83 allocs, 7956 ns |"},
		{"gateway", "BenchmarkRedisRoundTrips/one_key-2\t1\t2000000000 ns/op\t         1.000 redis-calls/1000-admitted\n",
			"| `gateway` | Redis round trips per 1 000 admitted requests (leases) | **1.000** (one key); **—** (1 000 keys) | without leases, one EVALSHA round trip per decision (`RedisDecision`, — ns each) |"},
		{"backend-peers", "| server | req/s | p50 ms | p99 ms | server CPU µs/page | PostgreSQL CPU µs/page | server + PostgreSQL µs/page |\n|---|---:|---:|---:|---:|---:|---:|\n" +
			"| recordsd | 6627 (6500–6700) | 0.52 (0.50–0.55) | 2.01 (1.9–2.2) | 104 (99–113) | 74 (70–80) | 178 (170–190) |\n" +
			"| PostGraphile | 1500 (1400–1600) | 2.5 (2.4–2.6) | 6.0 (5.0–7.0) | 626 (600–650) | 80 (75–85) | 706 (680–730) |\n\n" +
			"PostGraphile ÷ recordsd, round by round, median (min–max): req/s 0.23× (0.21–0.25), server CPU/page 6.03× (5.56–6.17), PostgreSQL CPU/page 1.08× (1.0–1.1), together 3.9× (3.8–4.0).\n",
			"| `backend-peers` | recordsd server CPU per page (25 bills, 8 fields) | **104 µs** (99–113) | PostGraphile 4, same page and database: 626 µs, **6.03×** recordsd's round by round; recordsd 6627 req/s, p99 2.01 ms |"},
	} {
		t.Run(c.suite, func(t *testing.T) {
			front, log := recordReport(t, c.suite, c.report)
			if !strings.Contains(front, "\n"+c.row) {
				t.Fatalf("front page lacks %q:\n%s", c.row, front)
			}
			if !strings.Contains(front, c.row[:strings.Index(c.row, " |")+2]) || !strings.Contains(front, "| — | by hand |") {
				t.Fatalf("front page lost a row:\n%s", front)
			}
			lines := strings.Split(front, "\n")
			at := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "| `"+c.suite+"` |") })
			if at != slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "| — |") })+1 {
				t.Errorf("a suite's first rows go at the end of the table:\n%s", front)
			}
			if c.suite == "gateway" && !strings.Contains(log, "\n```\nBenchmarkChain/bare-2") && !strings.Contains(log, "\n```\nBenchmarkRedisRoundTrips") && !strings.Contains(log, "\n```\ngoos") {
				t.Errorf("go test output is not in a code block in the log:\n%s", log)
			}
		})
	}
	front, _ := recordReport(t, "backend", "| Query | Clients | Requests | Items | p50 ms | p99 ms | max ms |\n|---|---:|---:|---:|---:|---:|---:|\n"+
		"| bills first page | 1 | 2000 | 25 | 0.39 | 0.60 | 5.66 |\n| bills first page | 4 | 2000 | 25 | 0.64 | 2.11 | 9.87 |\n"+
		"| bills page 1000 deep | 4 | 2000 | 25 | 0.77 | 2.66 | 9.64 |\n| bills congress=118 | 1 | 2000 | 25 | 0.49 | 0.76 | 4.75 |\n"+
		"| lobbying client_name=university | 1 | 2000 | 25 | 2.07 | 1.53 | 4.0 |\n")
	for _, row := range []string{
		"| `backend` | bills first page, p99 at 4 clients | **2.11 ms** (p50 0.64 ms) | the page 1 000 deep in the same run: p50 0.77 ms, p99 2.66 ms |",
		"| `backend` | the other queries of the run, p50 at 1 client | **1 of 2 ≤ 2 ms**; highest 2.07 ms (lobbying client_name=university) | the first page in the same run: p50 0.39 ms |",
	} {
		if !strings.Contains(front, row) {
			t.Errorf("front page lacks %q:\n%s", row, front)
		}
	}
	if strings.Contains(front, "| 9 ms |") {
		t.Errorf("the old backend row stayed:\n%s", front)
	}
}

// TestReportLeavesWhatItCannotRead: a suite whose rows are edited by hand,
// and a report without the summary, change no row (only the log grows);
// BENCH_WRITE=0 records nothing.
func TestReportLeavesWhatItCannotRead(t *testing.T) {
	front, log := recordReport(t, "cache", "| target | req/s |\n")
	if front != frontPage || !strings.Contains(log, "## cache (2026-12-07 10:00 UTC)") {
		t.Errorf("cache: front changed or log not appended:\n%s\n%s", front, log)
	}
	front, _ = recordReport(t, "side-by-side", "the suite failed before its summary\n")
	if front != frontPage {
		t.Errorf("a report without a summary changed the rows:\n%s", front)
	}
	front, log = recordReport(t, "side-by-side", sideBySideReport, "BENCH_WRITE=0")
	if front != frontPage || log != "# Benchmarks log\n" {
		t.Errorf("BENCH_WRITE=0 wrote:\n%s\n%s", front, log)
	}
}

// TestFrontPageRowsHaveOwners: every row of the shipped front page's table
// names its suite (one bench/run.sh knows, or — for a figure measured outside
// it) and has the six cells the script writes.
func TestFrontPageRowsHaveOwners(t *testing.T) {
	text, err := os.ReadFile("../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	suites := []string{"side-by-side", "cache", "gateway", "opcount", "mcp", "modules", "backend", "backend-peers", "unique-vars", "subscriptions"}
	var rows int
	var table bool
	for line := range strings.Lines(string(text)) {
		switch {
		case strings.HasPrefix(line, "| suite |"):
			table = true
		case !strings.HasPrefix(line, "|"):
			table = false
		case table && !strings.HasPrefix(line, "|---"):
			rows++
			cells := strings.Split(strings.TrimSpace(line), " | ")
			owner := strings.Trim(strings.TrimPrefix(cells[0], "| "), "`")
			if owner != "—" && !slices.Contains(suites, owner) {
				t.Errorf("row of no suite %q: %s", owner, line)
			}
			if len(cells) != 6 {
				t.Errorf("%d cells, want 6: %s", len(cells), line)
			}
		}
	}
	if rows < 10 {
		t.Fatalf("%d rows in the front page's table", rows)
	}
}
