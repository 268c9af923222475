#!/usr/bin/env bash
# make import-real [DATA=dir]: imports real upstream files into a throwaway
# database with --on-error stop, prints what landed, and drops the database.
# Committed tests use their own fixtures; this is the check against real input.
#
#   scripts/import-real.sh [DIR]     DIR (or $DATA_DIR) holds the upstream files:
#     DIR/congress-legislators/legislators-current.yaml   (members)
#     DIR/congress-gov-api-samples/                        (bills: Congress.gov API v3 JSON files)
# Without DIR the development machines' copy beside the repository is used
# (../shared/data); docs/operations.md "Importing real upstream files".
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
if [ ! -f "$members" ] || [ ! -d "$bills" ]; then
	echo "import-real: $data must hold congress-legislators/legislators-current.yaml and congress-gov-api-samples/ (make import-real DATA=dir)" >&2
	exit 1
fi
db="civicgate_real_$(date +%s)_$$"
psql -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -qc "CREATE DATABASE $db"
trap 'psql -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)"' EXIT
export DATABASE_URL="postgres://$PGUSER@$PGHOST:$PGPORT/$db?sslmode=disable"
echo "import-real: importing from $data"
bin/recordsd migrate
bin/recordsd sync members --file "$members" --on-error stop
bin/recordsd sync bills --file "$bills" --on-error stop
psql "$DATABASE_URL" -At -F ' ' -c "SELECT 'members', count(*) FROM members UNION ALL SELECT 'member_terms', count(*) FROM member_terms
  UNION ALL SELECT 'bills', count(*) FROM bills UNION ALL SELECT 'change_events', count(*) FROM change_events"
