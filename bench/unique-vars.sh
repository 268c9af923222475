#!/usr/bin/env bash
# The unique-vars suite of bench/run.sh (`make bench BENCH=unique-vars`; part of the default):
# the policy chain's CPU per request when every request carries the same document
# with a different variable value (graphql_guard's variables memo always misses),
# against the same civicgate binary as a plain reverse_proxy. bench/cmd/varsload
# runs the example library engine in-process as the upstream of both proxies
# (bench/Caddyfile.library-plain, bench/Caddyfile.library-gateway: civic_auth with
# a keys file, civic_rate_limit in memory, graphql_guard) and drives cells
# plain:unique, gateway:same (memo hits, for comparison) and gateway:unique.
# Then a CPU profile of the gateway during gateway:unique (BENCH_VARS_PROFILE
# seconds; 0 skips it), `go tool pprof -top` printed.
# Prints a Markdown report; bench/run.sh records it in docs/benchmarks-log.md (bench/report.sh).
#
# Env: BENCH_VARS_CONNS (16), BENCH_VARS_ROUNDS (3), BENCH_VARS_DURATION (2s),
#      BENCH_VARS_WARMUP (0.5s), BENCH_VARS_PROFILE (10), BENCH_VARS_PORT_BASE (18390:
#      +1 engine, +2 plain, +3 gateway, +4/+5 their admin endpoints).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
log() { echo "bench: $*" >&2; }

conns=${BENCH_VARS_CONNS:-16}
rounds=${BENCH_VARS_ROUNDS:-3}
duration=${BENCH_VARS_DURATION:-2s}
warmup=${BENCH_VARS_WARMUP:-0.5s}
profile=${BENCH_VARS_PROFILE:-10}
base=${BENCH_VARS_PORT_BASE:-18390}

LOADER=varsload BEARER_VAR=VARSLOAD_BEARER
# shellcheck source=bench/library-stack.sh
. bench/library-stack.sh

start_proxies ""

common=(--target "plain=http://127.0.0.1:$((base + 2))/graphql" --target "gateway=http://127.0.0.1:$((base + 3))/graphql"
	--auth gateway --pid "plain=$plain_pid" --pid "gateway=$gateway_pid" --conns "$conns")
cmd=(bin/varsload --engine "$BENCH_LIB_UPSTREAM" "${common[@]}" --rounds "$rounds" --duration "$duration" --warmup "$warmup")
cpu=$(sed -nE 's/^model name[[:space:]]*:[[:space:]]*(.*)/\1/p' /proc/cpuinfo | head -n1)
echo "Command: \`bench/run.sh unique-vars\` (bench/unique-vars.sh; env BENCH_VARS_CONNS=$conns BENCH_VARS_ROUNDS=$rounds BENCH_VARS_DURATION=$duration BENCH_VARS_WARMUP=$warmup BENCH_VARS_PROFILE=$profile) → \`${cmd[*]}\`."
echo "Machine: $(nproc) cores (${cpu}), $(go version | cut -d' ' -f3-), Linux $(uname -r); $(date -u '+%Y-%m-%d %H:%M UTC'); load average before $(cut -d' ' -f1-3 /proc/loadavg)."
echo
if ! "${cmd[@]}"; then
	for f in plain gateway; do log "--- $f log (tail)"; tail -n 20 "$work/$f.log" >&2; done
	exit 1
fi
echo
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)."

[ "$profile" -gt 0 ] || exit 0
# A second engine port: the first varsload has exited and released its own.
bin/varsload --engine "$BENCH_LIB_UPSTREAM" "${common[@]}" --cells gateway:unique --rounds 1 \
	--duration "$((profile + 2))s" --warmup 0.5s >"$work/profile-run.md" 2>"$work/profile-run.log" &
load_pid=$!
pids+=("$load_pid")
sleep 1
curl -fsS -o "$work/gateway.cpu.prof" "http://127.0.0.1:$((base + 5))/debug/pprof/profile?seconds=${profile}"
wait "$load_pid"
echo
echo "CPU profile of the gateway during gateway:unique (${profile} s, \`go tool pprof -top bin/civicgate gateway.cpu.prof | head -n 28\`):"
echo
echo '```'
go tool pprof -top bin/civicgate "$work/gateway.cpu.prof" 2>/dev/null | head -n 28
echo '```'
echo
echo "Cumulative (\`-top -cum\`), first 30 lines:"
echo
echo '```'
go tool pprof -top -cum bin/civicgate "$work/gateway.cpu.prof" 2>/dev/null | sed -n '6,35p'
echo '```'
