#!/usr/bin/env bash
# The side-by-side suite of bench/run.sh (`make bench`, `make bench BENCH=side-by-side`;
# run it through bench/run.sh, which makes sure PostgreSQL and Redis run).
# Side-by-side performance (docs/performance.md). Seeds a throwaway database
# (small scale), starts recordsd, a bare Caddy reverse_proxy (bench/Caddyfile.bare)
# and the full gateway (bench/Caddyfile.gateway: the shipped routes with auth,
# rate limit on Redis, guard), all plain HTTP/1.1 keep-alive on loopback, and runs
# bench/cmd/loadgen against direct / bare / gateway, interleaved, at 1 and 16
# connections. Records the run with bench/report.sh: its rows of BENCHMARKS.md, its report in
# docs/benchmarks-log.md. Builds
# bin/civicgate, bin/recordsd, bin/loadgen and bin/jwtissuer itself.
#
# Mixes: `records` and `light` send the bench's API key to the gateway. `<mix>-jwt` (records-jwt,
# light-jwt) sends the same requests with access tokens of the identity provider stand-in
# bench/cmd/jwtissuer (8 tokens of 8 subjects, cycled: the verification cache is warm, as with a
# production client) to a fourth target, gateway-jwt — the same gateway process and route —
# beside the key, in the same rounds. `<mix>-jwt-first-seen` sends a token never sent before on
# every request (a full signature verification each), for BENCH_JWT_FIRST_SEEN_ROUNDS rounds.
#
# Env: BENCH_ROUNDS (10), BENCH_DURATION (2s), BENCH_WARMUP (0.5s), BENCH_CONNS (1,16),
#      BENCH_MIXES ("records light records-jwt records-jwt-first-seen"),
#      BENCH_JWT_FIRST_SEEN_ROUNDS (1), BENCH_JWT_FIRST_SEEN_TOKENS (8000 per first-seen round: enough
#      for 2 s + 0.5 s cells at 1 and 16 connections up to ≈ 3000 req/s together; a run that uses them up
#      reports errors), BENCH_JWT_ALG (RS256; or ES256),
#      BENCH_PORT_BASE (18180: +1 recordsd, +2 bare,
#      +3 gateway, +4/+5 their admin endpoints, +6 the bench's own redis-server, +7 jwtissuer),
#      CIVICGATE_PG_HOST/PORT (127.0.0.1:5432), BENCH_WRITE (1: record the run; 0: print only),
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
mixes=${BENCH_MIXES:-records light records-jwt records-jwt-first-seen}
first_seen_rounds=${BENCH_JWT_FIRST_SEEN_ROUNDS:-1}
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
jwt_port=$((base + 7))
jwt_first_seen=0
for mix in $mixes; do
	case $mix in
	records | light | records-jwt | light-jwt) ;;
	records-jwt-first-seen | light-jwt-first-seen)
		jwt_first_seen=${BENCH_JWT_FIRST_SEEN_TOKENS:-$((8000 * first_seen_rounds))} ;;
	*) log "unknown mix \"$mix\" (records, light, records-jwt, light-jwt, records-jwt-first-seen, light-jwt-first-seen)"; exit 2 ;;
	esac
done
work=$(mktemp -d)
export XDG_DATA_HOME="$work/data" XDG_CONFIG_HOME="$work/config"

for p in $((base + 1)) $((base + 2)) $((base + 3)) $((base + 4)) $((base + 5)) $redis_port $jwt_port; do
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

# jwt_counters prints the gateway's token verifier counters (docs/identity.md "Counters"): verified, cache hits,
# verifications that waited for a slot, key set fetches.
jwt_counters() {
	curl -fsS --max-time 10 "http://${BENCH_GATEWAY_ADMIN}/metrics" | awk '
		/^civicgate_auth_jwt_verified_total / { v = $2 } /^civicgate_auth_jwt_cache_hits_total / { h = $2 }
		/^civicgate_auth_jwt_verify_waits_total / { w = $2 } /^civicgate_auth_jwt_jwks_refreshes_total / { f = $2 }
		END { printf "%d %d %d %d\n", v, h, w, f }'
}

reports=()
summary="$work/summary.md"
gateway_url="http://127.0.0.1:${BENCH_GATEWAY_PORT}/v1/graphql"
for mix in $mixes; do
	out="$work/report-$mix.md"
	requests=${mix%%-*} mix_rounds=$rounds tokens=()
	case $mix in
	*-jwt) tokens=(--bearer-file "gateway-jwt=$jwt_tokens") ;;
	*-jwt-first-seen) tokens=(--bearer-file "gateway-jwt=$jwt_first_seen_tokens" --bearer-once) mix_rounds=$first_seen_rounds ;;
	esac
	cmd=(bin/loadgen --mix "$requests" --label "$mix" --rounds "$mix_rounds" --duration "$duration" --warmup "$warmup" --conns "$conns"
		--target "direct=http://${CIVICGATE_UPSTREAM}/graphql"
		--target "bare=http://127.0.0.1:${BENCH_BARE_PORT}/v1/graphql"
		--target "gateway=${gateway_url}"
		--auth gateway "${procs[@]}" --redis "$redis_addr" --summary "$summary")
	if [ ${#tokens[@]} -gt 0 ]; then
		# The token target is the one the report's verdicts are about; the key's ratio to bare, measured in
		# the same rounds, and token ÷ key are ratio rows. The stand-in's CPU shows it is not on the path.
		cmd+=(--target "gateway-jwt=${gateway_url}" "${tokens[@]}" --compare gateway-jwt
			--ratio 'gateway/bare>=0.9' --ratio gateway-jwt/gateway --proc "idp=$jwtissuer_pid")
	fi
	log "mix ${mix}: ${mix_rounds} rounds × $(grep -o -- '--target' <<<"${cmd[*]}" | wc -l) targets × conns ${conns}"
	read -r v0 h0 w0 f0 < <(jwt_counters)
	if ! "${cmd[@]}" >"$out"; then
		for f in recordsd bare gateway jwtissuer; do log "--- $f log (tail)"; tail -n 20 "$work/$f.log" >&2; done
		exit 1
	fi
	read -r v1 h1 w1 f1 < <(jwt_counters)
	if [ ${#tokens[@]} -gt 0 ]; then
		printf '\nThe gateway'"'"'s token counters over the mix (admin /metrics, pre-check and warm-ups included): %d tokens verified by signature, %d answered from the verification cache, %d verifications waited for a slot, %d key set fetches.\n' \
			$((v1 - v0)) $((h1 - h0)) $((w1 - w0)) $((f1 - f0)) >>"$out"
	fi
	reports+=("$out")
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
cat "${reports[@]}"
echo
cat "$summary"

[ "$write" = 1 ] || exit 0
section="$work/section.md"
{
	echo "## Side by side: gateway vs bare Caddy vs direct"
	echo
	echo "Command: \`make bench\` (its first suite: \`bench/run.sh side-by-side\`, bench/side-by-side.sh; env BENCH_ROUNDS=${rounds} BENCH_DURATION=${duration} BENCH_WARMUP=${warmup} BENCH_CONNS=${conns} BENCH_MIXES=\"${mixes}\" BENCH_JWT_FIRST_SEEN_ROUNDS=${first_seen_rounds} BENCH_JWT_ALG=${BENCH_JWT_ALG:-RS256})."
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
	echo "checks every answer (200, \`data\`, no \`errors\`; and before timing, that all targets return identical bytes)."
	echo "CPU µs/req is utime+stime from /proc/<pid>/stat over the measured seconds ÷ requests (10 ms ticks); Redis"
	echo "cmds/req is the INFO commandstats delta ÷ requests."
	echo
	echo "Access tokens: the same gateway process also has civic_auth's \`jwt\` block (docs/identity.md): issuer"
	echo "\`bin/jwtissuer\` (bench/cmd/jwtissuer), a stand-in identity provider on loopback that generated one ${BENCH_JWT_ALG:-RS256} key for the run, serves"
	echo "OpenID discovery and the key set (Cache-Control max-age 1 h) and signed the tokens (RFC 9068 \`at+jwt\`: iss, aud,"
	echo "8 subjects, exp 1 h, \`plan: bench\` as the tier claim, \`org_id: bench\` = the key's organization). Only the issuer is"
	echo "a stand-in; the verification is the gateway's own. The e2e tests use ORY Hydra as the provider; a benchmark on"
	echo "this 2-core VM avoids its build and its CPU beside the measured processes. In a \`-jwt\` mix, \`gateway-jwt\`"
	echo "is the same URL as \`gateway\` with a token as the bearer instead of the key: 8 tokens in turn (verified on first"
	echo "sight, then from the cache, as a production client's token is); in a \`-jwt-first-seen\` mix each request"
	echo "brings a token the gateway has never seen (a full signature check every time). \`idp\` is the stand-in's CPU."
	echo
	echo "### Every mix: gateway ÷ bare (goal ≥ 0.90× throughput at 16 connections), key and token"
	echo
	echo "Median over rounds of each round's ratio; in a \`-jwt\` mix both rows come from the same rounds (a one-round row is"
	echo "one sample). Added p50/p99: candidate − bare at 1 connection. Proxy CPU: the gateway process's CPU µs per request"
	echo "over bare Caddy's (\`gateway-jwt\` is served by the \`gateway\` process)."
	echo
	cat "$summary"
	echo
	for mix in $mixes; do
		case $mix in
		records) echo "### Mix \`records\`: one page of each record family (PostgreSQL behind every request)" ;;
		light) echo "### Mix \`light\`: \`{ __typename }\` (no database; the proxies' share of each request is largest)" ;;
		*-jwt) echo "### Mix \`$mix\`: the \`${mix%%-*}\` requests with an access token (\`gateway-jwt\`) beside the key (\`gateway\`), same gateway, same rounds" ;;
		*-jwt-first-seen) echo "### Mix \`$mix\`: the \`${mix%%-*}\` requests, every token first seen (${first_seen_rounds} round(s))" ;;
		*) echo "### Mix \`$mix\`" ;;
		esac
		echo
		cat "$work/report-$mix.md"
		echo
	done
} >"$section"

bash bench/report.sh side-by-side "$section"
