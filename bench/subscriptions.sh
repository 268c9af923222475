#!/usr/bin/env bash
# The subscriptions suite of bench/run.sh (`make bench BENCH=subscriptions`):
# graphql-transport-ws subscriptions directly to the example library engine
# (run by bench/cmd/subsload as a child process, which timestamps each
# published event and counts the subscriptions it holds), through the same
# civicgate binary as a plain reverse_proxy (bench/Caddyfile.library-plain),
# through the gateway (bench/Caddyfile.library-gateway: civic_auth with a keys
# file, civic_rate_limit in memory, graphql_guard subscriptions
# { max_per_connection 100 max_per_key 10000 } filtering the reverse_proxy
# tunnel) and (BENCH_SUBS_MUX=1, the default) through the gateway that terminates the
# sockets and multiplexes them upstream with identical subscriptions shared
# (bench/Caddyfile.library-gateway-mux, target gateway-mux).
#
# Shapes (NAME=SOCKETSxSUBS[:EVENTS], every subscription the same document):
#   single  1x1:200             one subscriber, 200 events one at a time: added p99 over direct
#   multi   50x100              many subscriptions per socket: memory per subscription
#   fanout  BENCH_SUBS_FANOUTx1 N subscribers of one subscription: per event the last
#                               receipt's p50/p99, engine subscription count, CPU/message
#   sockets BENCH_SUBS_SOCKETSx1 one subscription per socket: memory per socket
# A tunnelling proxy holds 2 descriptors per socket (client and upstream end),
# so the default fanout and sockets shapes are capped at what the open-files
# limit allows (printed); BENCH_SUBS_SHAPES is taken as given.
# Runs once per stream_buffer_size in BENCH_SUBS_BUFFERS (fresh proxies each
# time; gateway-mux has no reverse_proxy on the socket path, the buffer does
# not apply to it). Prints a Markdown report; bench/run.sh records it in docs/benchmarks-log.md (bench/report.sh).
# Takes ≈ 10 min per buffer on 2 busy cores (most of it opening ~10 000 sockets
# through each proxy); BENCH_SUBS_BUFFERS=32KiB halves it.
#
# Env: BENCH_SUBS_SOCKETS (10000), BENCH_SUBS_FANOUT (5000), BENCH_SUBS_SHAPES
#      (single=1x1:200,multi=50x100,fanout=<FANOUT>x1,sockets=<SOCKETS>x1),
#      BENCH_SUBS_EVENTS (10 per cell unless its shape says :EVENTS), BENCH_SUBS_ROUNDS (1),
#      BENCH_SUBS_BUFFERS ("32KiB 4KiB"), BENCH_SUBS_MUX (1: adds gateway-mux; 0 leaves it out),
#      BENCH_SUBS_PORT_BASE (18290: +1 engine, +2 plain, +3 gateway, +4/+5 their
#      admin endpoints, +6 gateway-mux, +7 its admin endpoint).
# Profiling while it runs: curl "http://127.0.0.1:18295/debug/pprof/heap" (gateway admin).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
log() { echo "bench: $*" >&2; }

sockets=${BENCH_SUBS_SOCKETS:-10000}
fanout=${BENCH_SUBS_FANOUT:-5000}
events=${BENCH_SUBS_EVENTS:-10}
rounds=${BENCH_SUBS_ROUNDS:-1}
buffers=${BENCH_SUBS_BUFFERS:-32KiB 4KiB}
mux=${BENCH_SUBS_MUX:-1}
base=${BENCH_SUBS_PORT_BASE:-18290}

# subsload holds one descriptor per socket, its engine child one, a tunnelling
# proxy two (client and upstream ends).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
nofile=$(ulimit -n)
log "open files limit $nofile (hard $(ulimit -Hn)); ephemeral ports $(tr '\t' - </proc/sys/net/ipv4/ip_local_port_range)"

LOADER=subsload BEARER_VAR=SUBSLOAD_BEARER
# shellcheck source=bench/library-stack.sh
. bench/library-stack.sh

# cap_sockets N PID…: N, or the most sockets the proxies can tunnel within the
# open-files limit (2 per socket beyond what each holds at rest, 64 spare).
cap_sockets() {
	local n=$1 most=0 p fds
	shift
	for p in "$@"; do
		fds=$(find "/proc/$p/fd" -mindepth 1 -maxdepth 1 | wc -l)
		if [ "$fds" -gt "$most" ]; then most=$fds; fi
	done
	local fit=$(((nofile - most - 64) / 2))
	if [ "$n" -gt "$fit" ]; then
		log "$n sockets need $((2 * n + most)) descriptors in a tunnelling proxy (it holds $most at rest); the limit is $nofile: running $fit"
		n=$fit
	fi
	echo "$n"
}

failed=0
cpu=$(sed -nE 's/^model name[[:space:]]*:[[:space:]]*(.*)/\1/p' /proc/cpuinfo | head -n1)
echo "Machine: $(nproc) cores (${cpu}), $(go version | cut -d' ' -f3-), Linux $(uname -r); $(date -u '+%Y-%m-%d %H:%M UTC'); load average before $(cut -d' ' -f1-3 /proc/loadavg); open files limit $nofile; ephemeral ports $(tr '\t' - </proc/sys/net/ipv4/ip_local_port_range)."
echo
# What one frame to one subscriber costs before any proxy code runs: the floor
# the proxies' CPU per delivered message is read against.
bin/subsload floor --sockets "$(cap_sockets "$fanout")" --events "$events" || failed=1
for buf in $buffers; do
	export BENCH_STREAM_BUFFER=$buf
	start_proxies "-$buf"
	procs=("$plain_pid" "$gateway_pid")
	targets=(--target "direct=ws://${BENCH_LIB_UPSTREAM}/graphql"
		--target "plain=ws://127.0.0.1:$((base + 2))/graphql"
		--target "gateway=ws://127.0.0.1:$((base + 3))/graphql" --auth gateway
		--pid "plain=$plain_pid" --pid "gateway=$gateway_pid"
		--admin "plain=http://127.0.0.1:$((base + 4))" --admin "gateway=http://127.0.0.1:$((base + 5))")
	if [ "$mux" = 1 ]; then
		if ! start_mux "-$buf"; then
			log "--- gateway-mux log (tail)"; tail -n 20 "$work/gateway-mux-$buf.log" >&2
			exit 1
		fi
		procs+=("$mux_pid")
		targets+=(--target "gateway-mux=ws://127.0.0.1:$((base + 6))/graphql" --auth gateway-mux
			--pid "gateway-mux=$mux_pid" --admin "gateway-mux=http://127.0.0.1:$((base + 7))")
	fi
	shapes=${BENCH_SUBS_SHAPES:-single=1x1:200,multi=50x100,fanout=$(cap_sockets "$fanout" "${procs[@]}")x1,sockets=$(cap_sockets "$sockets" "${procs[@]}")x1}
	cmd=(bin/subsload --engine "$BENCH_LIB_UPSTREAM" --shapes "$shapes" --events "$events" --rounds "$rounds" "${targets[@]}")
	echo
	echo "### stream_buffer_size $buf"
	echo
	echo "Command: \`BENCH_SUBS_MUX=$mux BENCH_SUBS_BUFFERS=$buf BENCH_SUBS_SHAPES=$shapes BENCH_SUBS_EVENTS=$events BENCH_SUBS_ROUNDS=$rounds bench/run.sh subscriptions\` (bench/subscriptions.sh → ${cmd[*]})."
	echo
	if ! "${cmd[@]}"; then
		failed=1
		for f in plain gateway gateway-mux; do
			[ -f "$work/$f-$buf.log" ] || continue
			log "--- $f log (tail)"; tail -n 20 "$work/$f-$buf.log" >&2
		done
	fi
	kill "${procs[@]}"
	wait "${procs[@]}" 2>/dev/null || true
	pids=()
done
echo
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)."
exit "$failed"
