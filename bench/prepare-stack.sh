# Sourced by bench/side-by-side.sh and bench/cache.sh: builds the binaries, creates and seeds the throwaway
# database ${db} (through ${admin_url}), issues the bench key into LOADGEN_BEARER (the load generator's
# environment only: never echoed, never written to a file that outlives the run), starts the identity
# provider stand-in bin/jwtissuer on 127.0.0.1:${jwt_port} (jwtissuer_pid; the issuer and audience of
# bench/Caddyfile.gateway's jwt block in BENCH_JWT_ISSUER and BENCH_JWT_AUDIENCE; its access tokens in
# ${jwt_tokens}, and ${jwt_first_seen} more in ${jwt_first_seen_tokens} when that is above 0 — both in
# ${work}, mode 0600, gone with it), and starts recordsd and the bare Caddy (recordsd_pid, bare_pid). Every
# process is added to pids. Logs go to ${work}. cleanup (the scripts' EXIT trap) stops every process in pids
# and drops the database and ${work}.
# shellcheck shell=bash disable=SC2154 # db, admin_url, work, pids, jwt_port, CIVICGATE_UPSTREAM: set by the sourcing script

prepare_stack() {
	log "building bin/civicgate, bin/recordsd, bin/loadgen, bin/jwtissuer"
	go build -o bin/civicgate ./cmd/civicgate
	go build -o bin/recordsd ./cmd/recordsd
	go build -o bin/loadgen ./bench/cmd/loadgen
	go build -o bin/jwtissuer ./bench/cmd/jwtissuer

	log "database ${db}: migrate, seed small, key tables"
	psql "$admin_url" -qc "CREATE DATABASE \"${db}\"" >/dev/null
	bin/recordsd migrate >"$work/migrate.log" 2>&1
	bin/recordsd seed --scale small >"$work/seed.log" 2>&1
	bin/civicgate keys migrate >"$work/keys.log" 2>&1
	LOADGEN_BEARER=$(bin/civicgate keys issue --org bench --tier bench --env live 2>/dev/null | grep -oE 'cg_live_[0-9A-Za-z]+' | head -1)
	if [ -z "$LOADGEN_BEARER" ]; then log "could not issue the bench key"; exit 1; fi
	export LOADGEN_BEARER

	start_jwtissuer

	bin/recordsd serve --dev-insecure-no-identity --listen "$CIVICGATE_UPSTREAM" >"$work/recordsd.log" 2>&1 &
	recordsd_pid=$!
	pids+=("$recordsd_pid")
	bin/civicgate run --config bench/Caddyfile.bare --adapter caddyfile >"$work/bare.log" 2>&1 &
	bare_pid=$!
	pids+=("$bare_pid")
}

# start_jwtissuer starts the identity provider stand-in and waits until its discovery document answers, which
# it does only once its token files are written. Its tokens name the key's organization (org_id bench) and the
# Caddyfile's tier (plan bench), and carry 8 subjects, one per warm token.
start_jwtissuer() {
	jwt_tokens="$work/tokens.txt" jwt_first_seen_tokens="$work/tokens-first-seen.txt"
	export BENCH_JWT_ISSUER="http://127.0.0.1:${jwt_port}" BENCH_JWT_AUDIENCE="https://api.civicgate.bench/v1"
	local first=()
	if [ "${jwt_first_seen:-0}" -gt 0 ]; then first=(--first-seen "$jwt_first_seen" --first-seen-out "$jwt_first_seen_tokens"); fi
	bin/jwtissuer --listen "127.0.0.1:${jwt_port}" --alg "${BENCH_JWT_ALG:-RS256}" --audience "$BENCH_JWT_AUDIENCE" \
		--plan bench --org bench --subjects 8 --tokens 8 --out "$jwt_tokens" "${first[@]}" >"$work/jwtissuer.log" 2>&1 &
	jwtissuer_pid=$!
	pids+=("$jwtissuer_pid")
	for _ in $(seq 1 600); do
		curl -fsS -o /dev/null --max-time 30 "${BENCH_JWT_ISSUER}/.well-known/openid-configuration" 2>/dev/null && break
		kill -0 "$jwtissuer_pid" 2>/dev/null || { log "jwtissuer did not start"; cat "$work/jwtissuer.log" >&2; exit 1; }
		sleep 0.1
	done
	[ -s "$jwt_tokens" ] || { log "jwtissuer wrote no tokens"; cat "$work/jwtissuer.log" >&2; exit 1; }
	log "$(cat "$work/jwtissuer.log")"
}

cleanup() {
	trap - INT TERM EXIT
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	psql "$admin_url" -qc "DROP DATABASE IF EXISTS \"${db}\" WITH (FORCE)" >/dev/null 2>&1 || true
	rm -rf "$work"
}
