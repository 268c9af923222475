#!/usr/bin/env bash
# Records one suite's run (bench/run.sh calls it after each suite; bench/side-by-side.sh and bench/backend.sh after
# writing their reports):
#
#   bench/report.sh SUITE REPORT
#
# 1. appends REPORT, the suite's full output, to the dated log (docs/benchmarks-log.md) under "## SUITE (date)",
#    with the command and the machine; Markdown headings in it move one level down, and a report that is not
#    Markdown (the Go benchmark suites' `go test` output) goes in a code block;
# 2. for the suites whose summary it can read (side-by-side, backend, backend-peers, gateway), replaces the rows of
#    the front page's table (BENCHMARKS.md) whose first cell is `SUITE` — the suite column marks each row's owner —
#    with rows made from REPORT; the first run of a suite adds its rows at the end of the table. Other suites'
#    rows are edited by hand from the log. A summary it cannot find leaves the rows as they are, and says so.
#
# Env: BENCH_WRITE (0: record nothing), BENCH_FRONT (BENCHMARKS.md), BENCH_LOG (docs/benchmarks-log.md), BENCH_DATE (now, UTC),
#      BENCH_MACHINE (cores and CPU model), BENCH_COMMAND (make bench BENCH=SUITE): the test
#      (bench/report_test.go) points them at a temporary copy.
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: bench/report.sh SUITE REPORT" >&2; exit 2; }
suite=$1
report=$2
front=${BENCH_FRONT:-BENCHMARKS.md}
logfile=${BENCH_LOG:-docs/benchmarks-log.md}
when=${BENCH_DATE:-$(date -u '+%Y-%m-%d %H:%M UTC')}
machine=${BENCH_MACHINE:-"$(nproc) cores ($(sed -nE 's/^model name[[:space:]]*:[[:space:]]*(.*)/\1/p' /proc/cpuinfo | head -n1))"}
command=${BENCH_COMMAND:-make bench BENCH=$suite}
log() { echo "bench: $*" >&2; }

[ "${BENCH_WRITE:-1}" != 0 ] || { log "BENCH_WRITE=0: ${suite} not recorded"; exit 0; }
[ -f "$report" ] || { log "no report $report"; exit 1; }

# 1. The log.
{
	printf '\n## %s (%s)\n\nCommand: `%s`. Machine: %s.\n\n' "$suite" "$when" "$command" "$machine"
	case $suite in
	gateway | modules) printf '```\n'; cat "$report"; printf '```\n' ;;
	*) awk '/^```/ { fenced = !fenced } !fenced && /^#+ / { $0 = "#" $0 } { print }' "$report" ;;
	esac
} >>"$logfile"
log "appended the ${suite} report to ${logfile}"

# 2. The rows. Each extractor prints the suite's rows, or nothing.
rows=$(mktemp)
out=$(mktemp)
trap 'rm -f "$rows" "$out"' EXIT
cell_when="${when}; ${machine}"
case $suite in
side-by-side)
	# The summary table: | mix | rounds | ratio | throughput, max conns | goal | verdict | throughput, min conns |
	# added p50 | added p99 | p99 ratio | proxy CPU over base | errors |
	awk -F' *[|] *' -v suite="$suite" -v when="$cell_when" -v cmd="$command" '
		NF >= 13 && $4 ~ /÷/ && $3 ~ /^[0-9]+$/ {
			split($5, t, /[ ()]+/); split($8, m, /[ ()]+/); verdict = $7; gsub(/\*/, "", verdict)
			split($4, r, / ÷ /)
			printf "| `%s` | %s, throughput, mix `%s`, %s connections | **%s** (goal %s: %s) | %s in the same rounds; added p50 %s, p99 %s at %s connection(s); proxy CPU %s µs/req over %s | %s | `%s` |\n",
				suite, $4, $2, t[2], t[1], $6, verdict, r[2], $9, $10, m[2], $12, r[2], when, cmd
		}' "$report" >"$rows"
	;;
backend)
	# recordsbench: | query | clients | requests | items | p50 ms | p99 ms | max ms |
	awk -F' *[|] *' -v suite="$suite" -v when="$cell_when" -v cmd="$command" '
		NF >= 8 && $3 ~ /^[0-9]+$/ {
			p50[$2, $3] = $6; p99[$2, $3] = $7
			if ($3 == 1 && $2 != "bills first page" && $2 != "bills page 1000 deep") {
				n++; if ($6 <= 2) ok++
				if ($6 + 0 > worst + 0) { worst = $6; worstq = $2 }
			}
		}
		END {
			f = "bills first page"; d = "bills page 1000 deep"
			if ((f, 4) in p99)
				printf "| `%s` | bills first page, p99 at 4 clients | **%s ms** (p50 %s ms) | the page 1 000 deep in the same run: p50 %s ms, p99 %s ms | %s | `%s` |\n",
					suite, p99[f, 4], p50[f, 4], p50[d, 4], p99[d, 4], when, cmd
			if (n)
				printf "| `%s` | the other queries of the run, p50 at 1 client | **%d of %d ≤ 2 ms**; highest %s ms (%s) | the first page in the same run: p50 %s ms | %s | `%s` |\n",
					suite, ok, n, worst, worstq, p50[f, 1], when, cmd
		}' "$report" >"$rows"
	;;
backend-peers)
	# peersload: | server | req/s | p50 ms | p99 ms | server CPU µs/page | PostgreSQL CPU µs/page | … |, then
	# "PostGraphile ÷ recordsd, round by round, median (min–max): req/s …, server CPU/page R× (lo–hi), …".
	awk -F' *[|] *' -v suite="$suite" -v when="$cell_when" -v cmd="$command" '
		$2 == "recordsd" && NF >= 8 { rcpu = $6; split($3, q, " "); rps = q[1]; split($5, q, " "); rp99 = q[1] }
		$2 == "PostGraphile" && NF >= 8 { split($6, q, " "); pcpu = q[1] }
		/^PostGraphile ÷ recordsd/ && match($0, /server CPU\/page [0-9.]+×/) { ratio = substr($0, RSTART + 16, RLENGTH - 16) }
		END {
			if (rcpu != "" && pcpu != "" && ratio != "")
				split(rcpu, c, " ")
				printf "| `%s` | recordsd server CPU per page (25 bills, 8 fields) | **%s µs** %s | PostGraphile 4, same page and database: %s µs, **%s** recordsd'"'"'s round by round; recordsd %s req/s, p99 %s ms | %s | `%s` |\n",
					suite, c[1], c[2], pcpu, ratio, rps, rp99, when, cmd
		}' "$report" >"$rows"
	;;
gateway)
	# go test -bench lines: BenchmarkName-P  N  ns/op  B/op  allocs/op [value unit]...; the first run of each counts.
	awk -v suite="$suite" -v when="$cell_when" -v cmd="$command" '
		function v(x) { return x == "" ? "—" : x }
		/^Benchmark/ {
			name = $1; sub(/-[0-9]+$/, "", name)
			if (name in seen) next
			seen[name] = 1
			for (i = 3; i < NF; i++) {
				if ($(i + 1) == "ns/op") ns[name] = $i
				if ($(i + 1) == "B/op") by[name] = $i
				if ($(i + 1) == "allocs/op") al[name] = $i
				if ($(i + 1) == "redis-calls/1000-admitted") rt[name] = $i
			}
		}
		END {
			g = "BenchmarkChain/gateway"; b = "BenchmarkChain/bare"
			if ((g in al) && (b in al))
				printf "| `%s` | allocations the policy chain adds per request (civic_auth → civic_rate_limit → graphql_guard, in-process `BenchmarkChain`) | **+%d** (%s allocs, %s B, %s ns) | the bare route on the same provisioned server: %s allocs, %s ns | %s | `%s` |\n",
					suite, al[g] - al[b], al[g], by[g], ns[g], al[b], ns[b], when, cmd
			h = "BenchmarkCacheHit"; k = "BenchmarkHandlerCachedKey"; u = "BenchmarkCompileBillsQueryUncached"; p = "BenchmarkBaselineGqlparserParseValidate"
			if ((h in ns) || (k in ns))
				printf "| `%s` | guard cache hit; auth handler with a cached key | **%s ns**, %s allocs; **%s ns**, %s allocs | a cache miss (compile) %s ns; gqlparser'"'"'s own parse + validate %s ns | %s | `%s` |\n",
					suite, v(ns[h]), v(al[h]), v(ns[k]), v(al[k]), v(ns[u]), v(ns[p]), when, cmd
			o = "BenchmarkRedisRoundTrips/one_key"; t = "BenchmarkRedisRoundTrips/1000_keys"
			if ((o in rt) || (t in rt))
				printf "| `%s` | Redis round trips per 1 000 admitted requests (leases) | **%s** (one key); **%s** (1 000 keys) | without leases, one EVALSHA round trip per decision (`RedisDecision`, %s ns each) | %s | `%s` |\n",
					suite, v(rt[o]), v(rt[t]), v(ns["BenchmarkRedisDecision"]), when, cmd
		}' "$report" >"$rows"
	;;
*)
	log "the ${suite} rows of ${front} are edited by hand from the log"
	exit 0
	;;
esac
if [ ! -s "$rows" ]; then
	log "no ${suite} summary found in ${report}: the rows of ${front} are unchanged"
	exit 0
fi

# Replace the suite's rows where the first of them stood, or add them at the end of the table (the one whose
# header starts "| suite |").
awk -v owner="| \`${suite}\` |" -v rowsfile="$rows" '
	function put() { while ((getline line < rowsfile) > 0) print line; done = 1 }
	/^\| suite \|/ { table = 1 }
	index($0, owner) == 1 { if (!done) put(); next }
	table && !/^\|/ { if (!done) put(); table = 0 }
	{ print }
	END { if (table && !done) put(); if (!done) exit 3 }
' "$front" >"$out" || { log "no table with a \"| suite |\" header in ${front}"; exit 1; }
cat "$out" >"$front"
log "rewrote the ${suite} rows of ${front}"
