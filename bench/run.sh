#!/usr/bin/env bash
# The one entry point of every benchmark: `make bench` runs it (make passes BENCH as the suites). After each suite,
# bench/report.sh appends its full report to docs/benchmarks-log.md and rewrites its rows of the front page,
# BENCHMARKS.md (BENCH_WRITE=0: neither); docs/operations.md "Benchmarks" describes the suites.
#
#   bench/run.sh [SUITE ...] [--fresh] [-n]   suites: space- or comma-separated, run in the order given;
#                                             -n (--dry-run) prints what would run and stops
#
#   side-by-side  gateway vs bare Caddy vs recordsd direct, driven by bench/cmd/loadgen (bench/side-by-side.sh): the
#                 records and light mixes with an API key, records-jwt with access tokens of bench/cmd/jwtissuer
#                 beside the key, records-jwt-first-seen with a token never seen before on every request (≈ 9 min);
#                 rewrites its rows of BENCHMARKS.md
#   cache         response cache (docs/design.md D35): a polling mix of 50 repeated documents at 16 connections against
#                 the gateway with graphql_cache, the same gateway with CIVICGATE_CACHE=off, bare Caddy and recordsd
#                 direct, driven by bench/cmd/loadgen --mix polling (bench/cache.sh; ≈ 2 min); then the cache's hit
#                 micro-benchmark (BenchmarkHit, ./modules/gqlcache) and BenchmarkCacheStaleness (./e2e);
#                 its rows of BENCHMARKS.md by hand from the log
#   gateway       the gateway's Go benchmarks: the handler chain (bench/chain_test.go), auth, rate limit, guard
#                 (-count 3; rewrites its rows of BENCHMARKS.md)
#   opcount       what counting each request's operation adds (docs/design.md D83): BenchmarkOperationCounting
#                 (./bench, the shipped route with and without `operations off`, alternating) and the meter's Add,
#                 BENCH_OPCOUNT_COUNT rounds (8), paired round by round (bench/opcount.sh; ≈ 3 min); its row of
#                 BENCHMARKS.md by hand
#   mcp           a stateless MCP 2026-07-28 tools/call beside a 2025 session call (docs/design.md D84):
#                 BenchmarkMCPEras (./modules/mcp, the two eras' calls in alternating pairs through one chain,
#                 BENCH_MCP_PAIRS pairs (20000) in BENCH_MCP_ROUNDS rounds (8)), then civic_mcp's handler alone
#                 and the whole chain refusing a call from its headers, -count BENCH_MCP_COUNT (5)
#                 (bench/mcp.sh; ≈ 2 min); its row of BENCHMARKS.md by hand
#   modules       every module's Go benchmarks, ./modules/... (-count 5)
#   backend       recordsd latency over 1M bills with bench/cmd/recordsbench (bench/backend.sh); rewrites its rows
#                 of BENCHMARKS.md; --fresh (or BENCH_FRESH=1) drops and re-seeds its database
#   backend-peers recordsd vs PostGraphile 4 (npm ci into bench/peers) over the same database: one page of 25 bills,
#                 interleaved rounds, req/s, p50/p99 and server and PostgreSQL CPU per page, driven by
#                 bench/cmd/peersload (bench/backend-peers.sh; ≈ 2 min; keeps and reuses its database civicgate_peers,
#                 BENCH_PEERS_DB=civicgate_bench for the 1M-bill one; --fresh re-seeds); rewrites its row of BENCHMARKS.md
#   unique-vars   policy chain CPU per request with per-request-unique variables vs the same binary's plain
#                 reverse_proxy, in front of the example library engine, driven by bench/cmd/varsload
#                 (bench/unique-vars.sh; ≈ 40 s incl. a 10 s gateway CPU profile); its row of BENCHMARKS.md by hand
#   subscriptions graphql-transport-ws subscriptions direct vs plain reverse_proxy vs gateway (tunnel) and,
#                 the gateway terminating and multiplexing (shapes single 1×1, multi 50×100,
#                 fanout 5000 subscribers of one subscription, sockets 10000×1 capped by the open-files limit):
#                 delivery latency (every receipt and each event's last), engine subscriptions, CPU per message,
#                 memory per socket, driven by bench/cmd/subsload (bench/subscriptions.sh; ≈ 10 min per buffer)
#   default       side-by-side, gateway, opcount, unique-vars: what `make bench` runs when BENCH is empty (≈ 16 min)
#   all           side-by-side, cache, gateway, opcount, mcp, unique-vars, subscriptions, modules, backend
#
# Without arguments the suites come from BENCH (default: default). Each suite's own settings are BENCH_*
# variables, listed at the top of bench/side-by-side.sh, bench/backend.sh and bench/backend-peers.sh. GO names the go command (go).
# Makes sure PostgreSQL and Redis run first (scripts/services.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
log() { echo "bench: $*" >&2; }
usage() {
	local status=${1:-2} fd=2
	[ "$status" = 0 ] && fd=1
	sed -n '/^# The one entry point/,/^# Makes sure/p' "$0" | sed 's/^# \{0,1\}//' >&"$fd"
	exit "$status"
}

args=()
fresh=${BENCH_FRESH:-0}
dry=0
for a in "$@"; do
	case $a in
	--fresh) fresh=1 ;;
	-n | --dry-run) dry=1 ;;
	-h | --help | help) usage 0 ;;
	-*) log "unknown option $a"; usage ;;
	*) args+=("$a") ;;
	esac
done
[ ${#args[@]} -gt 0 ] || args=("${BENCH:-default}")

# Expand commas, "default" and "all"; check every name before anything runs.
suites=()
for a in "${args[@]}"; do
	IFS=', ' read -ra parts <<<"$a"
	for s in "${parts[@]}"; do
		case $s in
		side-by-side | cache | gateway | opcount | mcp | modules | backend | backend-peers | unique-vars | subscriptions) suites+=("$s") ;;
		default) suites+=(side-by-side gateway opcount unique-vars) ;;
		all) suites+=(side-by-side cache gateway opcount mcp unique-vars subscriptions modules backend) ;;
		*) log "unknown suite \"$s\""; usage ;;
		esac
	done
done
[ ${#suites[@]} -gt 0 ] || usage

backend_args=()
if [ "$fresh" = 1 ]; then backend_args=(--fresh); fi

# suite_cmd SUITE sets cmd to the command line of one suite.
suite_cmd() {
	case $1 in
	side-by-side) cmd=(bash bench/side-by-side.sh) ;;
	cache) cmd=(bash bench/cache.sh) ;;
	gateway) cmd=("$GO" test -run '^$' -bench . -benchmem -count 3 ./bench ./modules/auth ./modules/ratelimit ./modules/ratelimit/usage ./modules/gqlguard) ;;
	opcount) cmd=(bash bench/opcount.sh) ;;
	mcp) cmd=(bash bench/mcp.sh) ;;
	modules) cmd=("$GO" test -run '^$' -bench . -benchmem -count 5 ./modules/...) ;;
	backend) cmd=(bash bench/backend.sh "${backend_args[@]}") ;;
	backend-peers) cmd=(bash bench/backend-peers.sh "${backend_args[@]}") ;;
	unique-vars) cmd=(bash bench/unique-vars.sh) ;;
	subscriptions) cmd=(bash bench/subscriptions.sh) ;;
	esac
}

if [ "$dry" = 1 ]; then
	echo "scripts/services.sh all"
	for s in "${suites[@]}"; do
		suite_cmd "$s"
		echo "${cmd[*]}"
	done
	exit 0
fi

# bench_command SUITE is the command a row of BENCHMARKS.md names: make bench with the BENCH_* settings of this run.
bench_command() {
	local v line=""
	while IFS= read -r v; do
		case $v in BENCH_WRITE | BENCH_FRONT | BENCH_LOG | BENCH_DATE | BENCH_MACHINE | BENCH_COMMAND | BENCH) continue ;; esac
		line+="$v=$(printf '%q' "${!v}") "
	done < <(compgen -v BENCH_ | sort)
	echo "${line}make bench BENCH=$1"
}

scripts/services.sh all
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for s in "${suites[@]}"; do
	suite_cmd "$s"
	log "suite ${s}: ${cmd[*]}"
	BENCH_COMMAND=$(bench_command "$s")
	export BENCH_COMMAND
	"${cmd[@]}" | tee "$out/$s.md"
	# side-by-side and backend record their own report (with their method); the others print theirs.
	case $s in
	side-by-side | backend) ;;
	*) bash bench/report.sh "$s" "$out/$s.md" ;;
	esac
done
