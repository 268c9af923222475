#!/usr/bin/env bash
# What a stateless MCP 2026-07-28 tools/call costs the gateway beside a 2025-11-25 call on an open session, and what a
# call refused from its headers costs (docs/design.md D80, D84), in one run:
# BenchmarkMCPEras (./modules/mcp: the same tools/call get_book through one in-process chain, a session call and a
# stateless call one after the other in alternating order, each timed alone, BENCH_MCP_PAIRS pairs (20000) in
# BENCH_MCP_ROUNDS rounds (8)) and the refusal benchmarks (civic_mcp's handler alone refusing a tool the tier lacks,
# the whole chain refusing it, the whole chain refusing a call over the API rate; -count BENCH_MCP_COUNT, 5).
# Prints the raw lines, then per round the two eras' median call and their ratio, the medians over every pair,
# the allocations of each era, the process's CPU per call of each era (alternating blocks of 500 calls), and the
# refusals' medians. The goals: modern ÷ session ≤ 1; the handler's share of a refusal from the headers ≤ 5 µs.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
pairs=${BENCH_MCP_PAIRS:-20000}
count=${BENCH_MCP_COUNT:-5}
export BENCH_MCP_ROUNDS=${BENCH_MCP_ROUNDS:-8}
raw=$(mktemp)
trap 'rm -f "$raw" "$raw.out"' EXIT

# The provisioned servers log JSON lines between a benchmark's name and its figures: keep only go test's lines
# (and BenchmarkMCPEras's rounds).
run() {
	if ! "$GO" test -run '^$' -bench "$1" -benchmem "${@:2}" ./modules/mcp/ >"$raw.out" 2>&1; then
		cat "$raw.out" >&2
		exit 1
	fi
	sed -E 's/\{"level".*$//' "$raw.out" |
		grep -E '^(Benchmark|[[:space:]]*[0-9]+[[:space:]]+[0-9.]+ ns/op|cpu:|goos|goarch|[[:space:]]+erasbench_test.go:[0-9]+: (round|process))' >>"$raw" || true
}
run 'MCPEras$' -benchtime "${pairs}x" -count 1
run 'ModernRefusalHandler$|ModernRefusedFromHeaders$|ModernOverRate$' -count "$count"

printf '## A stateless MCP call beside a session call; a refusal from the headers\n\nMachine: %s, %s CPUs, load average %s.\n\n```\n' \
	"$(grep -m1 '^cpu:' "$raw" | sed 's/^cpu: //')" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
cat "$raw"
printf '```\n\n'
awk '
	/^Benchmark/ { name = $1; sub(/-[0-9]+$/, "", name) }
	/round [0-9]+: session/ {
		line = $0; sub(/.*round /, "", line); split(line, f, /[:,() ]+/)
		# f: round, "session", ns, "ns", "modern", ns, "ns", "modern/session", ratio
		r[++nr] = f[9]; printf "%s| %d | %s | %s | %s |\n", (nr == 1 ? "| round | session (ns) | modern (ns) | modern ÷ session |\n|---|---|---|---|\n" : ""), f[1], f[3], f[6], f[9]
	}
	/ ns\/op/ {
		for (i = 1; i < NF; i++) v[$(i + 1)] = $i
		if (name ~ /MCPEras$/) { ms = v["session-ns/call"]; mm = v["modern-ns/call"]; ratio = v["modern/session"]; sa = v["session-allocs/call"]; ma = v["modern-allocs/call"]; sc = v["session-cpu-ns/call"]; mc = v["modern-cpu-ns/call"]; sb = v["session-B/call"]; mb = v["modern-B/call"] }
		else if (name ~ /ModernRefusalHandler$/) { h[++nh] = v["ns/op"]; ha = v["allocs/op"] }
		else if (name ~ /ModernRefusedFromHeaders$/) { c[++nc] = v["ns/op"]; ca = v["allocs/op"] }
		else if (name ~ /ModernOverRate$/) { o[++no] = v["ns/op"]; oa = v["allocs/op"] }
		delete v
	}
	function sort(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t } }
	function median(a, n) { sort(a, n); return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
	END {
		if (ratio == "" || nh == 0 || nc == 0) { print "mcp: no figures read" > "/dev/stderr"; exit 1 }
		sort(r, nr)
		printf "\nMedians over every pair: session **%.0f ns**, modern **%.0f ns**, modern ÷ session **%.3f** (rounds %.3f–%.3f; goal ≤ 1: %s).\n", ms, mm, ratio, r[1], r[nr], (ratio <= 1 ? "met" : "not met")
		printf "Per call: session %.1f allocations, %.0f B; modern %.1f allocations, %.0f B.\n", sa, sb, ma, mb
		if (sc > 0) printf "The process'"'"'s CPU per call (every goroutine: the collector'"'"'s marking too), over %d alternating blocks of 500 calls of each era: session %.0f ns, modern %.0f ns, modern ÷ session **%.3f**.\n", 2 * nr, sc, mc, mc / sc
		printf "A refusal from the headers (a tool the tier lacks, 403 -31030): civic_mcp'"'"'s handler alone **%.0f ns** median of %d (%.0f–%.0f), %s allocations (goal ≤ 5 µs: %s); the whole chain %.0f ns (%.0f–%.0f), %s allocations.\n", median(h, nh), nh, h[1], h[nh], ha, (median(h, nh) <= 5000 ? "met" : "not met"), median(c, nc), c[1], c[nc], ca
		if (no) printf "A call over the API rate, the whole chain: %.0f ns (%.0f–%.0f), %s allocations.\n", median(o, no), o[1], o[no], oa
	}' "$raw"
