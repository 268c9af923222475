#!/usr/bin/env bash
# The backend suite of bench/run.sh (`make bench BENCH=backend`, alias `make bench-backend`; run it through
# bench/run.sh, which makes sure PostgreSQL runs): seed 1M bills and ≥200k of every other family into a SEPARATE
# database, serve it with bin/recordsd on a free port, measure GraphQL latency with bench/cmd/recordsbench, and
# record the run with bench/report.sh (its rows of BENCHMARKS.md, its report in docs/benchmarks-log.md). Builds
# bin/recordsd and bin/recordsbench itself.
#
#   bench/run.sh backend [--fresh]     --fresh (or BENCH_FRESH=1) drops and re-seeds the bench database
# Env: CIVICGATE_PG_HOST/PORT (default 127.0.0.1:5432, user postgres), BENCH_DB (default civicgate_bench),
#      BENCH_REQUESTS (timed requests per scenario and client count, default 400).
set -euo pipefail
cd "$(dirname "$0")/.."

fresh=0
for a in "$@"; do
	case $a in
	--fresh) fresh=1 ;;
	*) echo "usage: bench/run.sh backend [--fresh]" >&2; exit 2 ;;
	esac
done

log() { echo "bench-backend: $*" >&2; }
go build -o bin/recordsd ./cmd/recordsd
go build -o bin/recordsbench ./bench/cmd/recordsbench

pg_host=${CIVICGATE_PG_HOST:-127.0.0.1}
pg_port=${CIVICGATE_PG_PORT:-5432}
db=${BENCH_DB:-civicgate_bench}
requests=${BENCH_REQUESTS:-400}
admin_url="postgres://postgres@${pg_host}:${pg_port}/postgres?sslmode=disable"
export DATABASE_URL="postgres://postgres@${pg_host}:${pg_port}/${db}?sslmode=disable"

if [ "$fresh" = 1 ]; then
	log "dropping ${db} (--fresh)"
	psql "$admin_url" -qc "DROP DATABASE IF EXISTS \"${db}\" WITH (FORCE)" >/dev/null
fi
if ! psql "$admin_url" -Atqc "SELECT 1 FROM pg_database WHERE datname='${db}'" | grep -q 1; then
	log "creating database ${db}"
	psql "$admin_url" -qc "CREATE DATABASE \"${db}\"" >/dev/null
fi

# Seeded at 1m scale already? (every family at its 1m size; otherwise reload everything)
seeded=$(psql "$DATABASE_URL" -Atqc "SELECT (SELECT count(*) FROM bills) >= 1000000
	AND (SELECT count(*) FROM members) >= 200000 AND (SELECT count(*) FROM regulatory_filings) >= 200000
	AND (SELECT count(*) FROM federal_budget_lines WHERE dataset = 'OUTLAYS') >= 200000
	AND (SELECT count(*) FROM federal_budget_lines WHERE dataset = 'APPROPRIATIONS') >= 200000
	AND (SELECT count(*) FROM lobbying_disclosures) >= 200000" 2>/dev/null || echo f)
seed_note="reused an already seeded database (run with --fresh to measure the load)"
if [ "$seeded" != t ]; then
	log "seeding 1m scale into ${db} (migrate + COPY)"
	start=$(date +%s.%N)
	bin/recordsd seed --scale 1m --reset
	end=$(date +%s.%N)
	seed_note=$(printf 'seeded in %.1f s (`recordsd seed --scale 1m --reset`: migrate, COPY of all six tables with their indexes in place, ANALYZE)' "$(echo "$end - $start" | bc)")
fi
log "$seed_note"
# A reused database gets the migrations it lacks (idempotent; a new index or column at the 1m scale takes minutes).
bin/recordsd migrate >/dev/null
counts=$(psql "$DATABASE_URL" -Atqc "SELECT format('bills %s, members %s (terms %s), regulatory_filings %s, federal_budget_lines %s APPROPRIATIONS + %s OUTLAYS, lobbying_disclosures %s',
	(SELECT count(*) FROM bills), (SELECT count(*) FROM members), (SELECT count(*) FROM member_terms), (SELECT count(*) FROM regulatory_filings),
	(SELECT count(*) FROM federal_budget_lines WHERE dataset='APPROPRIATIONS'), (SELECT count(*) FROM federal_budget_lines WHERE dataset='OUTLAYS'),
	(SELECT count(*) FROM lobbying_disclosures))")

RECORDSD_CURSOR_SECRET=$(head -c 32 /dev/urandom | base64 | tr -d '=+/\n')
export RECORDSD_CURSOR_SECRET
srvlog=$(mktemp)
bin/recordsd serve --listen 127.0.0.1:0 --dev-insecure-no-identity 2>"$srvlog" &
srv=$!
cleanup() { kill "$srv" 2>/dev/null || true; wait "$srv" 2>/dev/null || true; rm -f "$srvlog"; }
trap cleanup EXIT
addr=""
for _ in $(seq 1 100); do
	addr=$(sed -nE 's/.*"msg":"recordsd serving".*"addr":"([^"]+)".*/\1/p' "$srvlog" | head -n1)
	[ -n "$addr" ] && break
	kill -0 "$srv" 2>/dev/null || { cat "$srvlog" >&2; exit 1; }
	sleep 0.1
done
[ -n "$addr" ] || { log "recordsd did not start"; cat "$srvlog" >&2; exit 1; }
log "recordsd serving on $addr (pid $srv)"

table=$(mktemp)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
bin/recordsbench --url "http://${addr}/graphql" --requests "$requests" --clients 1,4 --depth 1000 >"$table"

cpu=$(sed -nE 's/^model name[[:space:]]*:[[:space:]]*(.*)/\1/p' /proc/cpuinfo | head -n1)
section=$(mktemp)
{
	echo "## Backend (recordsd)"
	echo
	echo "Command: \`make bench BENCH=backend\` (\`bench/run.sh backend\`, bench/backend.sh; \`--fresh\` or BENCH_FRESH=1 re-seeds). Database \`${db}\`: ${counts}."
	echo "Load: ${seed_note}."
	echo
	echo "Machine: $(nproc) cores (${cpu}), $(go version | cut -d' ' -f3-), $(psql "$DATABASE_URL" -Atqc 'SHOW server_version' | cut -d' ' -f1) PostgreSQL, $(date -u '+%Y-%m-%d %H:%M UTC'); load average before ${load_before}. The VM is shared with other engineers' builds and tests: the load average says how busy it was."
	echo "Method: \`bin/recordsd serve --dev-insecure-no-identity\` on loopback; \`bin/recordsbench\` POSTs GraphQL over keep-alive"
	echo "connections, ${requests} timed requests per row after 10 warm-up requests, split evenly over the clients; latency is"
	echo "end to end (request write → full JSON body read). The deep page is reached once by walking \`nextCursor\` 999 times,"
	echo "then that same request is repeated."
	echo
	cat "$table"
	if [ -f backend/seed/BENCH_ANALYSIS.md ]; then
		echo
		cat backend/seed/BENCH_ANALYSIS.md
	fi
} >"$section"

bash bench/report.sh backend "$section"
rm -f "$section" "$table"
