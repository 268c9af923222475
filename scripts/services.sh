#!/usr/bin/env bash
# Makes sure PostgreSQL (127.0.0.1:5432, trust auth for user postgres) and Redis
# (127.0.0.1:6379) are running: probe, start if installed, install with apt-get
# if missing and we are root. Used by `make test`, `make up` and the benches.
# `services.sh chromium` (make browser, part of make test but not of make up)
# makes sure headless Chromium is installed for the browser tests.
# Honours CIVICGATE_PG_HOST/PORT and CIVICGATE_REDIS_HOST/PORT.
set -euo pipefail

PG_HOST=${CIVICGATE_PG_HOST:-127.0.0.1}
PG_PORT=${CIVICGATE_PG_PORT:-5432}
REDIS_HOST=${CIVICGATE_REDIS_HOST:-127.0.0.1}
REDIS_PORT=${CIVICGATE_REDIS_PORT:-6379}

log() { echo "services: $*" >&2; }

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

wait_port() { # host port name
	for _ in $(seq 1 60); do
		port_open "$1" "$2" && return 0
		sleep 0.5
	done
	log "$3 did not come up on $1:$2"
	return 1
}

apt_updated=0
apt_install() {
	if [ "$(id -u)" != 0 ]; then
		log "$* missing and not root: install it (apt-get install $*) or point CIVICGATE_* at a running server"
		return 1
	fi
	if [ $apt_updated = 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
		apt_updated=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}

ensure_postgres() {
	if port_open "$PG_HOST" "$PG_PORT"; then return 0; fi
	if [ "$PG_HOST" != 127.0.0.1 ] && [ "$PG_HOST" != localhost ]; then
		log "PostgreSQL at $PG_HOST:$PG_PORT is not reachable"; return 1
	fi
	if ! command -v pg_ctlcluster >/dev/null 2>&1 || [ -z "$(ls /etc/postgresql 2>/dev/null)" ]; then
		log "installing PostgreSQL"
		apt_install postgresql postgresql-contrib
	fi
	local ver
	ver=$(ls /etc/postgresql | sort -V | tail -1)
	local hba="/etc/postgresql/$ver/main/pg_hba.conf"
	# Local development and tests use trust auth on loopback, as documented.
	if [ -w "$hba" ] && ! grep -q "civicgate" "$hba"; then
		sed -i '1i # civicgate: trust on loopback for local development and tests\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\nlocal all all trust' "$hba"
	fi
	log "starting PostgreSQL $ver"
	pg_ctlcluster --skip-systemctl-redirect "$ver" main start >&2 || true
	wait_port "$PG_HOST" "$PG_PORT" PostgreSQL
}

ensure_redis() {
	if port_open "$REDIS_HOST" "$REDIS_PORT"; then return 0; fi
	if [ "$REDIS_HOST" != 127.0.0.1 ] && [ "$REDIS_HOST" != localhost ]; then
		log "Redis at $REDIS_HOST:$REDIS_PORT is not reachable"; return 1
	fi
	if ! command -v redis-server >/dev/null 2>&1; then
		log "installing Redis"
		apt_install redis-server
	fi
	log "starting Redis"
	mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
	redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$REDIS_PORT" --save "" --appendonly no \
		--dir /var/lib/redis --logfile /var/log/redis/civicgate.log >&2
	wait_port "$REDIS_HOST" "$REDIS_PORT" Redis
}

# ensure_chromium makes sure a Chromium binary is there for the browser tests
# (internal/testkit/testbrowser): /usr/bin/chromium or chromium on PATH, else Debian's
# chromium package when we are root.
ensure_chromium() {
	if [ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1; then return 0; fi
	if [ "$(id -u)" != 0 ]; then
		log "Chromium is missing and we are not root: install Debian's chromium package (sudo apt-get install chromium) for the browser tests"
		return 1
	fi
	log "installing Chromium"
	apt_install chromium
	if ! command -v chromium >/dev/null 2>&1; then
		log "apt-get installed chromium but no chromium binary is on PATH"
		return 1
	fi
	log "$(chromium --version 2>/dev/null || echo 'chromium installed')"
}

case "${1:-all}" in
postgres) ensure_postgres ;;
redis) ensure_redis ;;
chromium) ensure_chromium ;;
all) ensure_postgres; ensure_redis ;;
*) log "usage: $0 [postgres|redis|chromium|all]"; exit 2 ;;
esac
