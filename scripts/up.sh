#!/usr/bin/env bash
# `make up`: the whole stack in the foreground on https://localhost:8443.
# Makefile has already built bin/ and made sure PostgreSQL and Redis run.
# Writes the environment it used to .env.local (git-ignored) and reuses it on
# the next run, so data, secrets and Caddy's local CA survive restarts.
#
# Quiet by default (docs/operations.md "Local stack"): the setup commands'
# output and the servers' JSON logs go to .civicgate/logs/, whose paths the
# banner prints; CIVICGATE_UP_VERBOSE=1 prints them on the terminal instead.
# Ctrl-C stops everything this script started and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

log() { echo "up: $*" >&2; }

verbose=${CIVICGATE_UP_VERBOSE:-0}
logdir=$root/.civicgate/logs
setup_log=$logdir/setup.log
mkdir -p "$logdir"
# Each run starts its logs afresh: they are this run's, not an archive.
: >"$setup_log"
# fd 3 is where the setup commands write: the terminal when verbose, else setup.log.
if [ "$verbose" = 1 ]; then exec 3>&2; else exec 3>>"$setup_log"; fi

# quietly CMD…: runs a setup command with its output on fd 3; when quiet and
# it fails, shows the end of setup.log, which holds the reason.
quietly() {
	"$@" >&3 2>&3 && return 0
	local rc=$?
	if [ "$verbose" != 1 ]; then
		log "$* failed (exit $rc); the end of ${setup_log}:"
		tail -n 20 "$setup_log" >&2
	fi
	return "$rc"
}

# The servers, by name, once started; stop ends them and waits for them.
pids=()
names=()
stop() {
	trap - INT TERM EXIT
	if [ "${#pids[@]}" -gt 0 ]; then
		log "stopping ${names[*]}"
		kill "${pids[@]}" 2>/dev/null || true
		wait "${pids[@]}" 2>/dev/null || true
	fi
	exit "$1"
}
# Ctrl-C (or a TERM) is how make up is meant to end: exit 0, so make reports no error.
trap 'stop 0' INT TERM
trap 'stop $?' EXIT

rand_secret() { head -c 32 /dev/urandom | base64 | tr -d '=+/\n' | head -c 43; }

if [ ! -f .env.local ]; then
	# One database per checkout (docs/operations.md "Local stack"): a second
	# checkout on this machine gets its own, never the first one's rows sealed
	# with the first one's webhook key. An existing .env.local keeps its URL.
	checkout_db="civicgate_$(printf '%s' "$root" | sha256sum | cut -c1-8)"
	log "writing .env.local (first run); database ${checkout_db} for this checkout (${root})"
	umask 077
	cat > .env.local <<ENV
# Written by make up. Load it in another terminal with: set -a; . ./.env.local; set +a
DATABASE_URL=postgres://postgres@127.0.0.1:5432/${checkout_db}?sslmode=disable
REDIS_URL=redis://127.0.0.1:6379/0
RECORDSD_LISTEN=127.0.0.1:8081
RECORDSD_CURSOR_SECRET=$(rand_secret)
CIVIC_IDENTITY_SECRET=$(rand_secret)
CIVIC_WEBHOOK_SECRET_KEY=$(rand_secret)
CIVICGATE_WEBHOOKS_DEV_LOOPBACK=on
CIVICGATE_ENV=live
CIVICGATE_UPSTREAM=127.0.0.1:8081
XDG_DATA_HOME=$root/.civicgate/data
XDG_CONFIG_HOME=$root/.civicgate/config
CIVICGATE_CADDYFILE=$root/caddyfile/Caddyfile.local
ENV
fi
# .env.local written before `civicgate keys` checked tiers: name the Caddyfile
# whose tiers they check (docs/operations.md "Key management").
if ! grep -q '^CIVICGATE_CADDYFILE=' .env.local; then
	printf 'CIVICGATE_CADDYFILE=%s\n' "$root/caddyfile/Caddyfile.local" >> .env.local
fi
# .env.local written before webhooks existed: add their variables once.
if ! grep -q '^CIVIC_WEBHOOK_SECRET_KEY=' .env.local; then
	log "adding the webhook variables to .env.local"
	printf 'CIVIC_WEBHOOK_SECRET_KEY=%s\nCIVICGATE_WEBHOOKS_DEV_LOOPBACK=on\n' "$(rand_secret)" >> .env.local
fi
set -a
# shellcheck disable=SC1091
. ./.env.local
set +a
mkdir -p "$XDG_DATA_HOME" "$XDG_CONFIG_HOME"

dbname=$(sed -E 's#.*/([^/?]+)(\?.*)?$#\1#' <<<"$DATABASE_URL")
admin_url=$(sed -E "s#/${dbname}(\\?|\$)#/postgres\\1#" <<<"$DATABASE_URL")
log "database ${dbname} (DATABASE_URL in .env.local)"
if ! psql "$admin_url" -Atqc "SELECT 1 FROM pg_database WHERE datname='${dbname}'" | grep -q 1; then
	log "creating database ${dbname}"
	psql "$admin_url" -qc "CREATE DATABASE \"${dbname}\"" >/dev/null
fi

quietly bin/recordsd migrate
quietly bin/recordsd seed --scale small
quietly bin/civicgate keys migrate
quietly bin/civicgate console migrate
quietly bin/civicgate webhooks migrate
# The webhook secrets in this database must be sealed with this .env.local's
# key: refuse (with what to do) rather than start a gateway that cannot
# deliver them, or seal new ones with another key.
if ! bin/civicgate webhooks check-key >/dev/null 2>&3; then
	log "database ${dbname} holds webhook secrets sealed with another CIVIC_WEBHOOK_SECRET_KEY (another checkout's .env.local?)"
	log "use that checkout's value, or give this checkout its own database: DATABASE_URL in .env.local (see docs/operations.md \"Local stack\")"
	exit 1
fi

log "issuing a demo key (organization demo, tier enterprise)"
if bin/civicgate keys list --org demo 2>/dev/null | grep -q active; then
	keyout=$(bin/civicgate keys rotate --org demo --env live 2>&3)
else
	keyout=$(bin/civicgate keys issue --org demo --tier enterprise --env live --caddyfile caddyfile/Caddyfile.local 2>&3)
fi
api_key=$(grep -oE 'cg_live_[0-9A-Za-z]+' <<<"$keyout" | head -1)
if [ -z "$api_key" ]; then
	log "could not read the issued key"; exit 1
fi

# start NAME CMD…: runs a server in the background, its output in
# .civicgate/logs/NAME.log unless verbose.
start() {
	local name=$1
	shift
	if [ "$verbose" = 1 ]; then
		"$@" &
	else
		"$@" >"$logdir/$name.log" 2>&1 &
	fi
	pids+=($!)
	names+=("$name")
}

# died: the name of a server that is no longer running, if any.
died() {
	local i
	for i in "${!pids[@]}"; do
		if ! kill -0 "${pids[$i]}" 2>/dev/null; then
			echo "${names[$i]}"
			return 0
		fi
	done
	return 1
}

# gave_up NAME: the server did not come up; say where its log is.
gave_up() {
	if [ "$verbose" = 1 ]; then return; fi
	log "the end of $logdir/$1.log:"
	tail -n 20 "$logdir/$1.log" >&2
}

# Self-serve sign-up on the console, open, its mails written to a folder
# (docs/operations.md "Self-serve sign-up"); CIVICGATE_SIGNUP=closed turns it off.
console_port=${CIVICGATE_CONSOLE_PORT:-8444}
mail_folder=$root/.civicgate/mail
export CIVICGATE_SIGNUP=${CIVICGATE_SIGNUP:-open}
export CIVICGATE_SIGNUP_TIER=${CIVICGATE_SIGNUP_TIER:-free}
export CIVICGATE_TERMS_URL=${CIVICGATE_TERMS_URL:-https://example.org/terms}
export CIVICGATE_API_URL=${CIVICGATE_API_URL:-https://localhost:8443/v1/graphql}
export CIVICGATE_CONSOLE_URL=${CIVICGATE_CONSOLE_URL:-https://localhost:${console_port}}
export CIVICGATE_MAIL_FROM=${CIVICGATE_MAIL_FROM:-civicgate <noreply@localhost>}
if [ -z "${CIVICGATE_SMTP_URL:-}" ]; then
	export CIVICGATE_DEV_MAIL_FOLDER=$mail_folder
fi

start recordsd bin/recordsd serve
start civicgate bin/civicgate run --config caddyfile/Caddyfile.local --adapter caddyfile

# Ready when the site answers over TLS with the local CA. The probe carries no
# key, so its expected answer is 401: it prints nothing, and any answer counts.
ca="$XDG_DATA_HOME/caddy/pki/authorities/local/root.crt"
ready=
for _ in $(seq 1 300); do
	if [ -f "$ca" ] && curl -s --cacert "$ca" -o /dev/null https://localhost:8443/bills 2>/dev/null; then
		ready=1
		break
	fi
	if name=$(died); then
		log "$name stopped before the gateway answered"
		gave_up "$name"
		exit 1
	fi
	sleep 0.2
done
if [ -z "$ready" ]; then
	log "the gateway did not answer on https://localhost:8443 within 60 s"
	gave_up civicgate
	exit 1
fi

console_link=$(CIVICGATE_CONSOLE_URL="https://localhost:${console_port}" bin/civicgate console link --org demo --email admin@demo.example --role admin 2>&3)
console_link=${console_link%%$'\n'*} # the link; the next line says for how long

if [ "$verbose" = 1 ]; then
	logs="on this terminal (CIVICGATE_UP_VERBOSE=1)"
else
	logs="$logdir/civicgate.log, $logdir/recordsd.log
            (setup: $setup_log; follow with tail -f; CIVICGATE_UP_VERBOSE=1 make up prints them here)"
fi

cat <<MSG

civicgate is up.
  Base URL: https://localhost:8443
  API key: ${api_key}
  CA root:  ${ca}
  Logs:     ${logs}
  Console:  https://localhost:${console_port}  (organization demo; keys, usage, webhooks, audit log)
            sign in once, within 15 minutes: ${console_link}
            (another link: bin/civicgate console link --org demo --email you@example.org --role admin|viewer|operator)
  Sign up:  https://localhost:${console_port}/signup  (mode ${CIVICGATE_SIGNUP}; no mail is sent: each is a file
            under ${mail_folder}/, and its path is logged)

Try:
  curl --cacert '${ca}' -H 'Authorization: Bearer ${api_key}' -H 'Content-Type: application/json' \\
    -d '{"query":"{ bills(input:{limit:3}) { items { id officialTitle } nextCursor } }"}' https://localhost:8443/v1/graphql

Webhooks (loopback receivers allowed in make up only; see modules/webhooks/README.md):
  curl --cacert '${ca}' -H 'Authorization: Bearer ${api_key}' -H 'Content-Type: application/json' \\
    -d '{"url":"http://127.0.0.1:9999/hook"}' https://localhost:8443/v1/webhook-endpoints
  curl --cacert '${ca}' -H 'Authorization: Bearer ${api_key}' 'https://localhost:8443/v1/changes?limit=5'

In another terminal: set -a; . ./.env.local; set +a   (then bin/civicgate keys … and bin/recordsd … reach this stack)
Ctrl-C stops everything make up started.
MSG
# Until Ctrl-C (the INT trap exits 0) or a server ends by itself (exit 1).
set +e
wait -n "${pids[@]}"
rc=$?
name=$(died) || name="a server"
log "$name stopped (exit $rc)"
gave_up "$name"
exit 1
