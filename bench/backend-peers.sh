#!/usr/bin/env bash
# The backend-peers suite of bench/run.sh (`make bench BENCH=backend-peers`; run it through bench/run.sh, which
# makes sure PostgreSQL runs): recordsd (built from this tree) and PostGraphile 4 (bench/peers, installed here
# with `npm ci` from the committed lock) serve the SAME database, and bench/cmd/peersload sends both the same
# page — 25 bills, newest first, eight fields — in interleaved rounds over keep-alive connections. It prints a
# Markdown section on stdout, which bench/run.sh records (bench/report.sh: its row of BENCHMARKS.md, the section in
# docs/benchmarks-log.md): req/s, p50, p99, and the CPU per page of each server process and of the PostgreSQL backends
# serving it (/proc/<pid>/stat; so PostgreSQL must run on this machine).
#
#   bench/run.sh backend-peers [--fresh]   --fresh (or BENCH_FRESH=1) drops and re-seeds the database
# Env: CIVICGATE_PG_HOST/PORT (default 127.0.0.1:5432, user postgres); BENCH_PEERS_DB (default civicgate_peers;
#      kept between runs and reused when it has bills: civicgate_bench, the backend suite's 1M-bill database,
#      works as it is); BENCH_PEERS_SCALE (`recordsd seed --scale`, default small: what `make up` seeds);
#      BENCH_PEERS_ROUNDS (rounds per server, default 5), BENCH_PEERS_DURATION (measured time per round, 10s),
#      BENCH_PEERS_PREWARM (unmeasured load per server once before the rounds: node's JIT, 15s),
#      BENCH_PEERS_WARMUP (unmeasured load before each round, 2s), BENCH_PEERS_CONNS (connections, 4);
#      NPM (npm), NODE (node).
set -euo pipefail
cd "$(dirname "$0")/.."

fresh=${BENCH_FRESH:-0}
for a in "$@"; do
	case $a in
	--fresh) fresh=1 ;;
	*) echo "usage: bench/run.sh backend-peers [--fresh]" >&2; exit 2 ;;
	esac
done

log() { echo "bench-peers: $*" >&2; }
NPM=${NPM:-npm}
NODE=${NODE:-node}
pg_host=${CIVICGATE_PG_HOST:-127.0.0.1}
pg_port=${CIVICGATE_PG_PORT:-5432}
db=${BENCH_PEERS_DB:-civicgate_peers}
scale=${BENCH_PEERS_SCALE:-small}
rounds=${BENCH_PEERS_ROUNDS:-5}
duration=${BENCH_PEERS_DURATION:-10s}
prewarm=${BENCH_PEERS_PREWARM:-15s}
warmup=${BENCH_PEERS_WARMUP:-2s}
conns=${BENCH_PEERS_CONNS:-4}
admin_url="postgres://postgres@${pg_host}:${pg_port}/postgres?sslmode=disable"
db_url="postgres://postgres@${pg_host}:${pg_port}/${db}?sslmode=disable"

work=$(mktemp -d)
pids=()
cleanup() {
	trap - INT TERM EXIT
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "building bin/recordsd, bin/peersload"
go build -o bin/recordsd ./cmd/recordsd
go build -o bin/peersload ./bench/cmd/peersload

# Node: the machines have it; a fresh one without it gets Debian's (root, as scripts/services.sh does).
if ! command -v "$NODE" >/dev/null 2>&1 || ! command -v "$NPM" >/dev/null 2>&1; then
	if [ "$(id -u)" != 0 ]; then log "node and npm are missing: install Node.js 18 or later"; exit 1; fi
	log "installing nodejs and npm (apt-get)"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >&2
fi
# npm ci from the committed lock, once per lock: the stamp holds the lock's hash.
lock_sum=$(sha256sum bench/peers/package-lock.json | cut -d' ' -f1)
stamp=bench/peers/node_modules/.bench-peers-lock
if [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]; then
	log "npm ci in bench/peers (PostGraphile from package-lock.json)"
	(cd bench/peers && "$NPM" ci --no-audit --no-fund >&2)
	echo "$lock_sum" >"$stamp"
fi
pgl_version=$("$NODE" -p "require('./bench/peers/node_modules/postgraphile/package.json').version")

# The database: kept between runs; migrated and seeded the way `make up` does (scripts/up.sh) when it has no bills.
if [ "$fresh" = 1 ]; then
	log "dropping ${db} (--fresh)"
	psql "$admin_url" -qc "DROP DATABASE IF EXISTS \"${db}\" WITH (FORCE)" >/dev/null
fi
if ! psql "$admin_url" -Atqc "SELECT 1 FROM pg_database WHERE datname='${db}'" | grep -q 1; then
	log "creating database ${db}"
	psql "$admin_url" -qc "CREATE DATABASE \"${db}\"" >/dev/null
fi
bills=$(psql "$db_url" -Atqc "SELECT count(*) FROM bills WHERE deleted_at IS NULL" 2>/dev/null || echo 0)
seed_note="reused (run with --fresh to re-seed)"
if [ "$bills" -lt 25 ]; then
	log "seeding ${db}: recordsd migrate; recordsd seed --scale ${scale} --reset"
	DATABASE_URL=$db_url bin/recordsd migrate >"$work/migrate.log" 2>&1 || { cat "$work/migrate.log" >&2; exit 1; }
	DATABASE_URL=$db_url bin/recordsd seed --scale "$scale" --reset >"$work/seed.log" 2>&1 || { cat "$work/seed.log" >&2; exit 1; }
	seed_note="seeded by this run (\`recordsd migrate\`, \`recordsd seed --scale ${scale} --reset\`)"
else
	# A reused database gets the migrations it lacks (idempotent), so recordsd never meets an older schema.
	DATABASE_URL=$db_url bin/recordsd migrate >"$work/migrate.log" 2>&1 || { cat "$work/migrate.log" >&2; exit 1; }
fi
bills=$(psql "$db_url" -Atqc "SELECT count(*) FROM bills WHERE deleted_at IS NULL")
log "database ${db}: ${bills} bills, ${seed_note}"

# Each server's connections carry an application_name of this run, which is how peersload finds their backends.
rd_app="bench-peers-recordsd-$$"
pgl_app="bench-peers-postgraphile-$$"
RECORDSD_CURSOR_SECRET=$(head -c 32 /dev/urandom | base64 | tr -d '=+/\n')
export RECORDSD_CURSOR_SECRET
DATABASE_URL="${db_url}&application_name=${rd_app}" bin/recordsd serve --listen 127.0.0.1:0 --dev-insecure-no-identity \
	>"$work/recordsd.out" 2>"$work/recordsd.log" &
rd_pid=$!
pids+=("$rd_pid")
# exec: the pid is node's own, the process whose CPU is measured.
(cd bench/peers && DATABASE_URL="${db_url}&application_name=${pgl_app}" exec "$NODE" server.js) \
	>"$work/postgraphile.out" 2>"$work/postgraphile.log" &
pgl_pid=$!
pids+=("$pgl_pid")

# await_addr NAME PID FILE SED-EXPR: the address a server printed once it listens (PostGraphile introspects first).
await_addr() {
	local addr=""
	for _ in $(seq 1 1200); do
		addr=$(sed -nE "$4" "$3" | head -n1)
		[ -n "$addr" ] && break
		kill -0 "$2" 2>/dev/null || { log "$1 exited"; cat "$work"/*.log >&2; exit 1; }
		sleep 0.1
	done
	[ -n "$addr" ] || { log "$1 did not start in 120 s"; cat "$work"/*.log >&2; exit 1; }
	echo "$addr"
}
rd_addr=$(await_addr recordsd "$rd_pid" "$work/recordsd.log" 's/.*"msg":"recordsd serving".*"addr":"([^"]+)".*/\1/p')
pgl_addr=$(await_addr PostGraphile "$pgl_pid" "$work/postgraphile.out" 's/.*"addr":"([^"]+)".*/\1/p')
log "recordsd on ${rd_addr} (pid ${rd_pid}), PostGraphile ${pgl_version} on ${pgl_addr} (pid ${pgl_pid})"

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
bin/peersload --database-url "$db_url" --rounds "$rounds" --duration "$duration" --prewarm "$prewarm" --warmup "$warmup" --conns "$conns" \
	--clk-tck "$(getconf CLK_TCK)" \
	--recordsd "http://${rd_addr}/graphql" --recordsd-pid "$rd_pid" --recordsd-app "$rd_app" \
	--postgraphile "http://${pgl_addr}/graphql" --postgraphile-pid "$pgl_pid" --postgraphile-app "$pgl_app" >"$work/table.md" &
# In the background and waited for: bash runs a trap only once its foreground command ends, and a wait returns at once.
load_pid=$!
pids+=("$load_pid")
wait "$load_pid"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

cpu=$(sed -nE 's/^model name[[:space:]]*:[[:space:]]*(.*)/\1/p' /proc/cpuinfo | head -n1)
pg_version=$(psql "$db_url" -Atqc 'SHOW server_version' | cut -d' ' -f1)
rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain -- backend cmd/recordsd 2>/dev/null)" ]; then rev="${rev}+changes"; fi
cat <<EOF
## Backend peers (recordsd vs PostGraphile)

Command: \`make bench BENCH=backend-peers\` (\`bench/run.sh backend-peers\`, bench/backend-peers.sh; rounds ${rounds} × ${duration}
per server, each after ${warmup} of warm-up, all after ${prewarm} of warm-up per server; ${conns} keep-alive connections). Database \`${db}\`: ${bills} bills, ${seed_note}.

Machine: $(nproc) cores (${cpu}); load average before ${load_before}, after ${load_after} (a shared VM: other
engineers' builds and tests run beside it). $(date -u '+%Y-%m-%d %H:%M UTC'); recordsd at ${rev}, $(go version | cut -d' ' -f3),
node $("$NODE" --version), PostGraphile ${pgl_version} (bench/peers/package-lock.json), PostgreSQL ${pg_version}.

Method: both servers on loopback over the same database, \`recordsd serve --dev-insecure-no-identity\` and PostGraphile 4 as
a library (bench/peers/server.js: no watch, no GraphiQL, no query log, no mutations, dynamicJson). The page: recordsd
\`bills(input: {limit: 25}) { items { … } nextCursor }\`; PostGraphile \`allBills(first: 25, orderBy: [SORT_DATE_DESC, ID_DESC],
condition: {deletedAt: null}) { nodes { … } pageInfo { hasNextPage endCursor } }\` — the same table, no view, the same
order (sort_date is the stored NULLS-LAST key of introduced_date) and index, the same eight fields (id congress type number
officialTitle introducedDate memberName committeeNames); peersload checks both answer the same 25 bills first. Rounds
alternate recordsd, PostGraphile, recordsd, …; bench/cmd/peersload drives each with back-to-back POSTs. CPU per page:
utime+stime deltas over a round (/proc/<pid>/stat) ÷ pages, for the server process and for the PostgreSQL backends whose
application_name is that server's (pg_stat_activity). The load generator shares the 2 cores with both.

EOF
cat "$work/table.md"
