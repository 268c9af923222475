#!/usr/bin/env bash
# Imports the real upstream files kept beside the repository (../shared/data,
# or $DATA_DIR) into a throwaway database with --on-error stop, prints what
# landed, and drops the database. Committed tests use their own fixtures
# (a fresh clone has no ../shared); this is the check against real input.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA_DIR=${DATA_DIR:-../shared/data}
PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
[ -d "$DATA_DIR/congress-legislators" ] || { echo "no real data in $DATA_DIR (set DATA_DIR)" >&2; exit 1; }
db="civicgate_real_$(date +%s)_$$"
psql -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -qc "CREATE DATABASE $db"
trap 'psql -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)"' EXIT
export DATABASE_URL="postgres://$PGUSER@$PGHOST:$PGPORT/$db?sslmode=disable"
bin/recordsd migrate
bin/recordsd sync members --file "$DATA_DIR/congress-legislators/legislators-current.yaml" --on-error stop
bin/recordsd sync bills --file "$DATA_DIR/congress-gov-api-samples" --on-error stop
psql "$DATABASE_URL" -At -F ' ' -c "SELECT 'members', count(*) FROM members UNION ALL SELECT 'member_terms', count(*) FROM member_terms
  UNION ALL SELECT 'bills', count(*) FROM bills UNION ALL SELECT 'change_events', count(*) FROM change_events"
