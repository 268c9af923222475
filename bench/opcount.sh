#!/usr/bin/env bash
# What counting each request's operation adds to a request (docs/design.md D70, D83), in one run:
# BenchmarkOperationCounting (./bench: the shipped route with usage per key, with and without `operations off`,
# BENCH_OPCOUNT_COUNT rounds (default 8) of both halves in alternating order, the rounds run by the benchmark
# itself so that the halves interleave) and BenchmarkOperationMeterAdd (the meter's Add on an existing cell,
# ./modules/ratelimit/usage, -count BENCH_OPCOUNT_COUNT). Prints the raw lines, then per round with − without
# and with ÷ without, and their median, least and greatest: when the spread of the differences is wider than
# the median, the machine's noise is larger than the figure.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
count=${BENCH_OPCOUNT_COUNT:-8}
export BENCH_OPCOUNT_COUNT=$count
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT

# The provisioned servers log JSON lines between a benchmark's name and its figures: keep only go test's lines.
run() {
	if ! "$GO" test -run '^$' -bench "$1" -benchmem -count "$3" "$2" >"$raw.out" 2>&1; then
		cat "$raw.out" >&2
		exit 1
	fi
	sed -E 's/\{"level".*$//' "$raw.out" | grep -E '^(Benchmark|[[:space:]]*[0-9]+[[:space:]]+[0-9.]+ ns/op|cpu:|goos|goarch)' >>"$raw" || true
	rm -f "$raw.out"
}
run 'OperationCounting' ./bench 1
run 'OperationMeterAdd$' ./modules/ratelimit/usage "$count"

printf '## What operation counting adds per request\n\nMachine: %s, %s CPUs, load average %s.\n\n```\n' \
	"$(grep -m1 '^cpu:' "$raw" | sed 's/^cpu: //')" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
cat "$raw"
printf '```\n\n'
awk '
	# A name, alone on its line or followed by its figures; a round after the first is name#NN.
	/^Benchmark/ { name = $1; sub(/-[0-9]+$/, "", name); sub(/#[0-9]+$/, "", name) }
	/ ns\/op/ {
		for (i = 1; i < NF; i++) {
			if ($(i + 1) == "ns/op") ns = $i
			if ($(i + 1) == "allocs/op") allocs = $i
		}
		if (name ~ /OperationCounting\/with$/) { w[++nw] = ns; wa = allocs }
		else if (name ~ /OperationCounting\/without$/) { wo[++nwo] = ns; woa = allocs }
		else if (name ~ /OperationMeterAdd$/) { m[++nm] = ns; ma = allocs }
	}
	function sort(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t } }
	function median(a, n) { sort(a, n); return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
	END {
		n = nw < nwo ? nw : nwo
		if (n == 0 || nm == 0) { print "opcount: no figures read" > "/dev/stderr"; exit 1 }
		print "| round | with (ns) | without (ns) | with − without (ns) | with ÷ without |"
		print "|---|---|---|---|---|"
		for (i = 1; i <= n; i++) {
			d[i] = w[i] - wo[i]; r[i] = w[i] / wo[i]
			printf "| %d | %.0f | %.0f | %+.0f | %.3f |\n", i, w[i], wo[i], d[i], r[i]
		}
		md = median(d, n); mr = median(r, n); mm = median(m, nm)
		printf "\nMedian of %d rounds: with − without **%+.0f ns** (least %+.0f, greatest %+.0f), with ÷ without **%.3f** (%.3f–%.3f); allocations %s with, %s without.\n", n, md, d[1], d[n], mr, r[1], r[n], wa, woa
		printf "The meter'"'"'s Add on an existing cell: median **%.1f ns**, %s allocations (%d counts, %.1f–%.1f).\n", mm, ma, nm, m[1], m[nm]
		if (d[n] - d[1] > (md < 0 ? -md : md)) printf "The spread of the differences (%.0f ns) is wider than their median: the machine'"'"'s noise exceeds what counting adds.\n", d[n] - d[1]
	}' "$raw"
