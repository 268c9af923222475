#!/usr/bin/env bash
# The cache suite of bench/run.sh (`make bench BENCH=cache`; run it through bench/run.sh, which makes sure
# PostgreSQL and Redis run). Response cache (docs/design.md D35): a polling workload of 50 distinct documents (mix
# `polling` of bench/cmd/loadgen: 25 bills pages, 25 members pages by state), every connection cycling
# through them, against four targets in one run, interleaved:
#   cached   the gateway, bench/Caddyfile.gateway (the shipped /v1/graphql route with graphql_cache on,
#            kept exact by the change feed as in caddyfile/Caddyfile.local)
#   uncached the same Caddyfile in a second process with CIVICGATE_CACHE=off
#   bare     bare Caddy reverse-proxying to recordsd (bench/Caddyfile.bare)
#   direct   recordsd itself
# Seeds a throwaway database (small scale), issues one key of the Caddyfile's `bench` tier (quota and cost
# budget 10⁹/h, never reached), prints a Markdown report with the ratios cached ÷ bare (goal ≥ 3×) and
# cached ÷ direct (goal ≥ 1×) and the gateway's cache counters; bench/run.sh records it in docs/benchmarks-log.md (bench/report.sh); its row of BENCHMARKS.md is edited by hand.
# Builds bin/civicgate, bin/recordsd and bin/loadgen itself.
#
# Env: BENCH_ROUNDS (10), BENCH_DURATION (2s), BENCH_WARMUP (0.5s), BENCH_CONNS (16),
#      BENCH_PORT_BASE (18190: +1 recordsd, +2 bare, +3 cached, +4 uncached, +5/+6/+7 their admin
#      endpoints, +8 the bench's own redis-server, +9 the identity provider stand-in bench/cmd/jwtissuer that
#      the Caddyfile's jwt block needs), CIVICGATE_PG_HOST/PORT (127.0.0.1:5432).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

log() { echo "bench: $*" >&2; }

rounds=${BENCH_ROUNDS:-10}
duration=${BENCH_DURATION:-2s}
warmup=${BENCH_WARMUP:-0.5s}
conns=${BENCH_CONNS:-16}
base=${BENCH_PORT_BASE:-18190}
pg_host=${CIVICGATE_PG_HOST:-127.0.0.1}
pg_port=${CIVICGATE_PG_PORT:-5432}

rand() { head -c 48 /dev/urandom | base64 | tr -d '=+/\n' | head -c "$1"; }

db="civicgate_cachebench_$(rand 8 | tr '[:upper:]' '[:lower:]')"
admin_url="postgres://postgres@${pg_host}:${pg_port}/postgres?sslmode=disable"
export DATABASE_URL="postgres://postgres@${pg_host}:${pg_port}/${db}?sslmode=disable"
export RECORDSD_CURSOR_SECRET CIVIC_IDENTITY_SECRET
RECORDSD_CURSOR_SECRET=$(rand 43)
CIVIC_IDENTITY_SECRET=$(rand 43)
export CIVICGATE_UPSTREAM="127.0.0.1:$((base + 1))"
export BENCH_BARE_PORT=$((base + 2)) BENCH_BARE_ADMIN="127.0.0.1:$((base + 5))"
cached_port=$((base + 3)) uncached_port=$((base + 4))
cached_admin="127.0.0.1:$((base + 6))" uncached_admin="127.0.0.1:$((base + 7))"
export CIVICGATE_SCHEMA="$root/backend/schema/records.graphqls"
CIVICGATE_RL_PREFIX="civicgate:cachebench:$(rand 8):"
export CIVICGATE_RL_PREFIX
redis_port=$((base + 8))
jwt_port=$((base + 9))
work=$(mktemp -d)
export XDG_DATA_HOME="$work/data" XDG_CONFIG_HOME="$work/config"

for p in $(seq $((base + 1)) $((base + 9))); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		log "port $p is in use; set BENCH_PORT_BASE"; exit 1
	fi
done

# shellcheck source=bench/prepare-stack.sh
. bench/prepare-stack.sh
pids=()
trap cleanup INT TERM EXIT

# A redis-server of its own (as bench/side-by-side.sh), else the shared one.
if command -v redis-server >/dev/null; then
	redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
		--logfile "$work/redis.log" &
	pids+=("$!")
	export REDIS_URL="redis://127.0.0.1:${redis_port}/0"
	for _ in $(seq 1 100); do
		redis-cli -p "$redis_port" ping 2>/dev/null | grep -q PONG && break
		sleep 0.05
	done
else
	export REDIS_URL="redis://127.0.0.1:6379/0"
fi

prepare_stack
BENCH_GATEWAY_PORT=$cached_port BENCH_GATEWAY_ADMIN=$cached_admin CIVICGATE_CACHE=on \
	bin/civicgate run --config bench/Caddyfile.gateway --adapter caddyfile >"$work/cached.log" 2>&1 &
cached_pid=$!
pids+=("$cached_pid")
BENCH_GATEWAY_PORT=$uncached_port BENCH_GATEWAY_ADMIN=$uncached_admin CIVICGATE_CACHE=off \
	bin/civicgate run --config bench/Caddyfile.gateway --adapter caddyfile >"$work/uncached.log" 2>&1 &
uncached_pid=$!
pids+=("$uncached_pid")

cpu=$(sed -nE 's/^model name[[:space:]]*:[[:space:]]*(.*)/\1/p' /proc/cpuinfo | head -n1)
echo "Machine: $(nproc) cores (${cpu}), $(go version | cut -d' ' -f3-), Linux $(uname -r); $(date -u '+%Y-%m-%d %H:%M UTC'); load average before $(cut -d' ' -f1-3 /proc/loadavg)."
echo

cmd=(bin/loadgen --mix polling --rounds "$rounds" --duration "$duration" --warmup "$warmup" --conns "$conns"
	--target "cached=http://127.0.0.1:${cached_port}/v1/graphql"
	--target "uncached=http://127.0.0.1:${uncached_port}/v1/graphql"
	--target "bare=http://127.0.0.1:${BENCH_BARE_PORT}/v1/graphql"
	--target "direct=http://${CIVICGATE_UPSTREAM}/graphql"
	--auth cached --auth uncached
	--ratio 'cached/bare>=3' --ratio 'cached/direct>=1' --ratio uncached/bare --ratio cached/uncached
	--proc "recordsd=$recordsd_pid" --proc "bare=$bare_pid" --proc "cached=$cached_pid" --proc "uncached=$uncached_pid")
log "mix polling: ${rounds} rounds × 4 targets × conns ${conns}"
if ! "${cmd[@]}"; then
	for f in recordsd bare cached uncached; do log "--- $f log (tail)"; tail -n 20 "$work/$f.log" >&2; done
	exit 1
fi
echo
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)."
# The cached gateway's own count of its answers (hit / miss / bypass) over the whole run, warm-ups included.
echo
echo "Cached gateway, graphql_cache counters over the whole run (check and warm-ups included):"
echo
curl -fsS "http://${cached_admin}/metrics" | grep -E '^civicgate_graphql_cache_(requests_total|stores_total|invalidations_total|flushes_total|listener_up)' | sed 's/^/    /' || log "no cache metrics on ${cached_admin}"

# The servers above are idle from here on; the Go benchmarks start what they need themselves.
echo
echo "go test -run '^\$' -bench BenchmarkHit -benchmem -count 5 ./modules/gqlcache/"
echo
go test -run '^$' -bench BenchmarkHit -benchmem -count 5 ./modules/gqlcache/ | sed 's/^/    /'
echo
echo "go test -run '^\$' -bench BenchmarkCacheStaleness -benchtime 100x -count 3 ./e2e/"
echo
go test -run '^$' -bench BenchmarkCacheStaleness -benchtime 100x -count 3 ./e2e/ | sed 's/^/    /'
