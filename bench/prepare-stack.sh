# Sourced by bench/side-by-side.sh and bench/cache.sh: builds the binaries, creates and seeds the throwaway
# database ${db} (through ${admin_url}), issues the bench key into LOADGEN_BEARER (the load generator's
# environment only: never echoed, never written to a file that outlives the run), and starts recordsd and
# the bare Caddy (recordsd_pid, bare_pid; both added to pids). Logs go to ${work}. cleanup (the scripts'
# EXIT trap) stops every process in pids and drops the database and ${work}.
# shellcheck shell=bash disable=SC2154 # db, admin_url, work, pids, CIVICGATE_UPSTREAM: set by the sourcing script

prepare_stack() {
	log "building bin/civicgate, bin/recordsd, bin/loadgen"
	go build -o bin/civicgate ./cmd/civicgate
	go build -o bin/recordsd ./cmd/recordsd
	go build -o bin/loadgen ./bench/cmd/loadgen

	log "database ${db}: migrate, seed small, key tables"
	psql "$admin_url" -qc "CREATE DATABASE \"${db}\"" >/dev/null
	bin/recordsd migrate >"$work/migrate.log" 2>&1
	bin/recordsd seed --scale small >"$work/seed.log" 2>&1
	bin/civicgate keys migrate >"$work/keys.log" 2>&1
	LOADGEN_BEARER=$(bin/civicgate keys issue --org bench --tier bench --env live 2>/dev/null | grep -oE 'cg_live_[0-9A-Za-z]+' | head -1)
	if [ -z "$LOADGEN_BEARER" ]; then log "could not issue the bench key"; exit 1; fi
	export LOADGEN_BEARER

	bin/recordsd serve --dev-insecure-no-identity --listen "$CIVICGATE_UPSTREAM" >"$work/recordsd.log" 2>&1 &
	recordsd_pid=$!
	pids+=("$recordsd_pid")
	bin/civicgate run --config bench/Caddyfile.bare --adapter caddyfile >"$work/bare.log" 2>&1 &
	bare_pid=$!
	pids+=("$bare_pid")
}

cleanup() {
	trap - INT TERM EXIT
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	psql "$admin_url" -qc "DROP DATABASE IF EXISTS \"${db}\" WITH (FORCE)" >/dev/null 2>&1 || true
	rm -rf "$work"
}
