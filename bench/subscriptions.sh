#!/usr/bin/env bash
# The subscriptions suite of bench/run.sh (`make bench BENCH=subscriptions`):
# graphql-transport-ws subscriptions directly to the example library engine
# (run in-process by bench/cmd/subsload, which timestamps each published event),
# through the same civicgate binary as a plain reverse_proxy
# (bench/Caddyfile.library-plain) and through the gateway
# (bench/Caddyfile.library-gateway: civic_auth with a keys file, civic_rate_limit
# in memory, graphql_guard subscriptions { max_per_connection 100 max_per_key 10000 }).
# Each shape SOCKETSxSUBS runs on every target in turn; the proxies' memory per
# subscription is VmRSS and (after a forced GC) Go heap+stack in use.
# Runs once per stream_buffer_size in BENCH_SUBS_BUFFERS (fresh proxies each time).
# Prints a Markdown report; does not edit BENCHMARKS.md.
#
# Env: BENCH_SUBS_SHAPES (1x1,50x100,5000x1), BENCH_SUBS_EVENTS (10), BENCH_SUBS_ROUNDS (1),
#      BENCH_SUBS_BUFFERS ("32KiB 4KiB"), BENCH_SUBS_PORT_BASE (18290: +1 engine, +2 plain,
#      +3 gateway, +4/+5 their admin endpoints).
# Profiling while it runs: curl "http://127.0.0.1:18295/debug/pprof/heap" (gateway admin).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
log() { echo "bench: $*" >&2; }

shapes=${BENCH_SUBS_SHAPES:-1x1,50x100,5000x1}
events=${BENCH_SUBS_EVENTS:-10}
rounds=${BENCH_SUBS_ROUNDS:-1}
buffers=${BENCH_SUBS_BUFFERS:-32KiB 4KiB}
base=${BENCH_SUBS_PORT_BASE:-18290}

# 5 000 sockets need ≈ 10 000 descriptors in subsload (client + engine ends)
# and in each proxy (client + upstream ends).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
log "open files limit $(ulimit -n)"

LOADER=subsload BEARER_VAR=SUBSLOAD_BEARER
# shellcheck source=bench/library-stack.sh
. bench/library-stack.sh

cpu=$(sed -nE 's/^model name[[:space:]]*:[[:space:]]*(.*)/\1/p' /proc/cpuinfo | head -n1)
echo "Machine: $(nproc) cores (${cpu}), $(go version | cut -d' ' -f3-), Linux $(uname -r); $(date -u '+%Y-%m-%d %H:%M UTC'); load average before $(cut -d' ' -f1-3 /proc/loadavg); open files limit $(ulimit -n)."
for buf in $buffers; do
	export BENCH_STREAM_BUFFER=$buf
	start_proxies "-$buf"
	cmd=(bin/subsload --engine "$BENCH_LIB_UPSTREAM" --shapes "$shapes" --events "$events" --rounds "$rounds"
		--target "direct=ws://${BENCH_LIB_UPSTREAM}/graphql"
		--target "plain=ws://127.0.0.1:$((base + 2))/graphql"
		--target "gateway=ws://127.0.0.1:$((base + 3))/graphql" --auth gateway
		--pid "plain=$plain_pid" --pid "gateway=$gateway_pid"
		--admin "plain=http://127.0.0.1:$((base + 4))" --admin "gateway=http://127.0.0.1:$((base + 5))")
	echo
	echo "### reverse_proxy stream_buffer_size $buf"
	echo
	echo "Command: \`BENCH_SUBS_BUFFERS=$buf BENCH_SUBS_SHAPES=$shapes BENCH_SUBS_EVENTS=$events BENCH_SUBS_ROUNDS=$rounds bench/run.sh subscriptions\` (bench/subscriptions.sh → ${cmd[*]})."
	echo
	if ! "${cmd[@]}"; then
		for f in plain gateway; do log "--- $f log (tail)"; tail -n 20 "$work/$f-$buf.log" >&2; done
		exit 1
	fi
	kill "$plain_pid" "$gateway_pid"
	wait "$plain_pid" "$gateway_pid" 2>/dev/null || true
	pids=()
done
echo
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)."
