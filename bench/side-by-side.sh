#!/usr/bin/env bash
# The side-by-side suite of bench/run.sh (`make bench`, `make bench BENCH=side-by-side`;
# run it through bench/run.sh, which makes sure PostgreSQL and Redis run).
# Side-by-side performance (docs/performance.md). Seeds a throwaway database
# (small scale), starts recordsd, a bare Caddy reverse_proxy (bench/Caddyfile.bare)
# and the full gateway (bench/Caddyfile.gateway: the shipped routes with auth,
# rate limit on Redis, guard), all plain HTTP/1.1 keep-alive on loopback, and runs
# bench/cmd/loadgen against direct / bare / gateway, interleaved, at 1 and 16
# connections. Writes the "Side by side" section of BENCHMARKS.md. Builds
# bin/civicgate, bin/recordsd and bin/loadgen itself.
#
# Env: BENCH_ROUNDS (10), BENCH_DURATION (2s), BENCH_WARMUP (0.5s), BENCH_CONNS (1,16),
#      BENCH_MIXES ("records light"), BENCH_PORT_BASE (18180: +1 recordsd, +2 bare,
#      +3 gateway, +4/+5 their admin endpoints, +6 the bench's own redis-server),
#      CIVICGATE_PG_HOST/PORT (127.0.0.1:5432), BENCH_WRITE (1: update BENCHMARKS.md),
#      BENCH_GATEWAY_CACHE (off: the gateway's graphql_cache is a pass-through, so every request reaches
#      recordsd as through bare Caddy; the cached comparison is bench/cache.sh).
# Profiling: while it runs, the gateway's pprof is on its admin endpoint, e.g.
#   curl -o gw.prof "http://127.0.0.1:18185/debug/pprof/profile?seconds=20"
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

log() { echo "bench: $*" >&2; }

rounds=${BENCH_ROUNDS:-10}
duration=${BENCH_DURATION:-2s}
warmup=${BENCH_WARMUP:-0.5s}
conns=${BENCH_CONNS:-1,16}
mixes=${BENCH_MIXES:-records light}
base=${BENCH_PORT_BASE:-18180}
pg_host=${CIVICGATE_PG_HOST:-127.0.0.1}
pg_port=${CIVICGATE_PG_PORT:-5432}
write=${BENCH_WRITE:-1}

rand() { head -c 48 /dev/urandom | base64 | tr -d '=+/\n' | head -c "$1"; }

db="civicgate_sidebyside_$(rand 8 | tr '[:upper:]' '[:lower:]')"
admin_url="postgres://postgres@${pg_host}:${pg_port}/postgres?sslmode=disable"
export DATABASE_URL="postgres://postgres@${pg_host}:${pg_port}/${db}?sslmode=disable"
export RECORDSD_CURSOR_SECRET CIVIC_IDENTITY_SECRET
RECORDSD_CURSOR_SECRET=$(rand 43)
CIVIC_IDENTITY_SECRET=$(rand 43)
export CIVICGATE_UPSTREAM="127.0.0.1:$((base + 1))"
export BENCH_BARE_PORT=$((base + 2)) BENCH_GATEWAY_PORT=$((base + 3))
export BENCH_BARE_ADMIN="127.0.0.1:$((base + 4))" BENCH_GATEWAY_ADMIN="127.0.0.1:$((base + 5))"
export CIVICGATE_SCHEMA="$root/backend/schema/records.graphqls"
CIVICGATE_RL_PREFIX="civicgate:bench:$(rand 8):"
export CIVICGATE_RL_PREFIX
export CIVICGATE_CACHE=${BENCH_GATEWAY_CACHE:-off}
redis_port=$((base + 6))
work=$(mktemp -d)
export XDG_DATA_HOME="$work/data" XDG_CONFIG_HOME="$work/config"

for p in $((base + 1)) $((base + 2)) $((base + 3)) $((base + 4)) $((base + 5)) $redis_port; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		log "port $p is in use; set BENCH_PORT_BASE"; exit 1
	fi
done

# shellcheck source=bench/prepare-stack.sh
. bench/prepare-stack.sh
pids=()
trap cleanup INT TERM EXIT

# A redis-server of its own, so INFO commandstats counts only this bench's
# commands (the shared one on 6379 serves other tests too).
if command -v redis-server >/dev/null; then
	redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
		--logfile "$work/redis.log" &
	redis_pid=$!
	pids+=("$redis_pid")
	export REDIS_URL="redis://127.0.0.1:${redis_port}/0"
	redis_note="its own \`redis-server\` ($(redis-server --version | grep -oE 'v=[0-9.]+' | cut -c3-)) on loopback"
	for _ in $(seq 1 100); do
		redis-cli -p "$redis_port" ping 2>/dev/null | grep -q PONG && break
		sleep 0.05
	done
else
	export REDIS_URL="redis://127.0.0.1:6379/0"
	redis_pid=""
	redis_note="the shared Redis on 6379 (no redis-server binary: command counts include other clients)"
fi
redis_addr=${REDIS_URL#redis://}
redis_addr=${redis_addr%/*}

prepare_stack
bin/civicgate run --config bench/Caddyfile.gateway --adapter caddyfile >"$work/gateway.log" 2>&1 &
gateway_pid=$!
pids+=("$gateway_pid")

procs=(--proc "recordsd=$recordsd_pid" --proc "bare=$bare_pid" --proc "gateway=$gateway_pid")
[ -n "$redis_pid" ] && procs+=(--proc "redis=$redis_pid")

cpu=$(sed -nE 's/^model name[[:space:]]*:[[:space:]]*(.*)/\1/p' /proc/cpuinfo | head -n1)
machine="$(nproc) cores (${cpu}), $(go version | cut -d' ' -f3-), Linux $(uname -r), PostgreSQL $(psql "$DATABASE_URL" -Atqc 'SHOW server_version' | cut -d' ' -f1)"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

reports=()
for mix in $mixes; do
	out="$work/report-$mix.md"
	cmd=(bin/loadgen --mix "$mix" --rounds "$rounds" --duration "$duration" --warmup "$warmup" --conns "$conns"
		--target "direct=http://${CIVICGATE_UPSTREAM}/graphql"
		--target "bare=http://127.0.0.1:${BENCH_BARE_PORT}/v1/graphql"
		--target "gateway=http://127.0.0.1:${BENCH_GATEWAY_PORT}/v1/graphql"
		--auth gateway "${procs[@]}" --redis "$redis_addr")
	log "mix ${mix}: ${rounds} rounds × 3 targets × conns ${conns}"
	if ! "${cmd[@]}" >"$out"; then
		for f in recordsd bare gateway; do log "--- $f log (tail)"; tail -n 20 "$work/$f.log" >&2; done
		exit 1
	fi
	reports+=("$out")
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
cat "${reports[@]}"

[ "$write" = 1 ] || exit 0
section="$work/section.md"
{
	echo "## Side by side: gateway vs bare Caddy vs direct"
	echo
	echo "Command: \`make bench\` (its first suite: \`bench/run.sh side-by-side\`, bench/side-by-side.sh; env BENCH_ROUNDS=${rounds} BENCH_DURATION=${duration} BENCH_WARMUP=${warmup} BENCH_CONNS=${conns} BENCH_MIXES=\"${mixes}\")."
	echo "Machine: ${machine}; $(date -u '+%Y-%m-%d %H:%M UTC'); load average before ${load_before}, after ${load_after}."
	echo "The VM is shared with other engineers' builds and tests: compare only the ratios of one run; the load averages above say how busy its 2 cores were."
	echo
	echo "Setup: one \`bin/recordsd serve --dev-insecure-no-identity\` (small seed in a throwaway database) behind both"
	echo "proxies; \`direct\` posts to it, \`bare\` is \`bench/Caddyfile.bare\` (the same route without the three civic handlers:"
	echo "X-Request-Id/-Server headers, rewrite, header_up, reverse_proxy), \`gateway\` is"
	echo "\`bench/Caddyfile.gateway\` (the /v1/graphql route of the shipped \`caddyfile/routes.caddy\`: civic_auth with a cached key → civic_rate_limit"
	echo "on ${redis_note}, tier quota 10⁹/h and cost budget 10⁹ points/h so never hit, leases of 1000, usage counted per key into PostgreSQL, \`on_store_error local\` as shipped → graphql_guard with a warm cache, spending the cost →"
	echo "graphql_cache with \`CIVICGATE_CACHE=${CIVICGATE_CACHE}\` (off: a pass-through; the cached comparison is bench/cache.sh) → reverse_proxy). Same binary, same global options (\`metrics\` on, no access log), same upstream"
	echo "transport. Plain HTTP/1.1 keep-alive on loopback for all three: TLS would cost both Caddy variants the same and is"
	echo "not what is compared. \`bin/loadgen\` (bench/cmd/loadgen) runs closed-loop connections (one client per connection),"
	echo "checks every answer (200, \`data\`, no \`errors\`; and before timing, that all three targets return identical bytes)."
	echo "CPU µs/req is utime+stime from /proc/<pid>/stat over the measured seconds ÷ requests (10 ms ticks); Redis"
	echo "cmds/req is the INFO commandstats delta ÷ requests."
	echo
	for mix in $mixes; do
		case $mix in
		records) echo "### Mix \`records\`: one page of each record family (PostgreSQL behind every request)" ;;
		light) echo "### Mix \`light\`: \`{ __typename }\` (no database; the proxies' share of each request is largest)" ;;
		*) echo "### Mix \`$mix\`" ;;
		esac
		echo
		cat "$work/report-$mix.md"
		echo
	done
} >"$section"

if [ ! -f BENCHMARKS.md ]; then printf '# Benchmarks\n\n' >BENCHMARKS.md; fi
tmp="$work/BENCHMARKS.md"
if grep -q '^## Side by side' BENCHMARKS.md; then
	# Replace the section: from its heading up to the next "## " heading.
	awk -v sect="$section" '
		/^## Side by side/ { skipping = 1; while ((getline line < sect) > 0) print line; next }
		skipping && /^## / { skipping = 0 }
		!skipping { print }
	' BENCHMARKS.md >"$tmp"
else
	# First run: the section goes first, right after the title line.
	{ head -n1 BENCHMARKS.md; echo; cat "$section"; tail -n +2 BENCHMARKS.md; } >"$tmp"
fi
cp "$tmp" BENCHMARKS.md
log "wrote the side-by-side section of BENCHMARKS.md"
