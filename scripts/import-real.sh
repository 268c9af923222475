#!/usr/bin/env bash
# make import-real [DATA=dir]: imports real upstream files into a throwaway database with the default
# flags (--on-error stop), prints each import's summary and what landed, and drops the database. Committed
# tests use their own fixtures; this is the check against real input (docs/operations.md "Importing real
# upstream files").
#
#   scripts/import-real.sh [DIR]     DIR (or $DATA_DIR) holds the upstream files, any of:
#     DIR/congress-legislators/legislators-current.yaml   (members)
#     DIR/congress-gov-api-samples/                        (bills: Congress.gov API v3 JSON files, subfolders too)
#     DIR/omb/*.csv                                        (federal_budgets appropriations: one OMB
#                                                           budget-authority release per file, each an edition)
#     DIR/mts/*.json                                       (federal_budgets outlays: MTS Table 5 pages)
# Without DIR the development machines' copy beside the repository is used (../shared/data).
# Fails (exit 1) when an import fails or reports a malformed record.
set -euo pipefail
data=${1:-${DATA_DIR:-}}
if [ -n "$data" ] && [ -d "$data" ]; then
	data=$(cd "$data" && pwd) # relative to where it was given, before the cd below
fi
cd "$(dirname "$0")/.."
data=${data:-../shared/data}
PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
members="$data/congress-legislators/legislators-current.yaml"
bills="$data/congress-gov-api-samples"
shopt -s nullglob
omb=("$data"/omb/*.csv)
mts=("$data"/mts/*.json)
shopt -u nullglob
if [ ! -f "$members" ] && [ ! -d "$bills" ] && [ ${#omb[@]} = 0 ] && [ ${#mts[@]} = 0 ]; then
	echo "import-real: $data holds none of congress-legislators/legislators-current.yaml, congress-gov-api-samples/, omb/*.csv, mts/*.json (make import-real DATA=dir)" >&2
	exit 1
fi
db="civicgate_real_$(date +%s)_$$"
psql -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -qc "CREATE DATABASE $db"
trap 'psql -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)"' EXIT
export DATABASE_URL="postgres://$PGUSER@$PGHOST:$PGPORT/$db?sslmode=disable"
echo "import-real: importing from $data"
bin/recordsd migrate
log=$(mktemp)
trap 'rm -f "$log"; psql -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)"' EXIT
# sync runs one import with the default flags, shows its notes and summary, and fails on a malformed record.
sync() {
	local start=$SECONDS
	bin/recordsd sync "$@" 2>&1 | tee "$log" | grep -v ' progress ' || true
	if [ "${PIPESTATUS[0]}" != 0 ] || ! grep -q ' done .* malformed=0' "$log"; then
		echo "import-real: recordsd sync $* failed or reported malformed records" >&2
		exit 1
	fi
	echo "import-real: $1 took $((SECONDS - start)) s"
}
[ -f "$members" ] && sync members --file "$members"
[ -d "$bills" ] && sync bills --file "$bills"
for f in "${omb[@]}"; do sync federal_budgets --source appropriations --file "$f"; done
for f in "${mts[@]}"; do sync federal_budgets --source outlays --file "$f"; done
psql "$DATABASE_URL" -At -F ' ' -c "SELECT 'members', count(*) FROM members UNION ALL SELECT 'member_terms', count(*) FROM member_terms
  UNION ALL SELECT 'bills', count(*) FROM bills
  UNION ALL SELECT 'federal_budget_lines ' || dataset || coalesce(' edition ' || edition, ''), count(*) FROM federal_budget_lines GROUP BY dataset, edition
  UNION ALL SELECT 'change_events', count(*) FROM change_events"
