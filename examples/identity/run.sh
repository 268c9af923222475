#!/usr/bin/env bash
# Your identity provider's access tokens through civicgate in front of a
# GraphQL backend, in one command (examples/identity/README.md):
#
#   examples/identity/run.sh
#
# builds civicgate, libraryd and ORY Hydra, starts Hydra (the OAuth 2.0
# provider), libraryd (the library engine of examples/other-backend) and
# civicgate with examples/identity/Caddyfile, registers a client-credentials
# client, fetches a token, shows a query, a refusal and the RFC 9728 metadata,
# and runs until Ctrl-C, which stops all three. Needs Go, a C compiler (Hydra
# keeps its state in SQLite, a cgo package) and curl; no PostgreSQL or Redis.
#
# Environment (all optional):
#   HYDRA_PORT, HYDRA_ADMIN_PORT   Hydra's public and admin ports (4444, 4445)
#   LIBRARY_PORT                   libraryd's port (4100)
#   GATEWAY_PORT                   the gateway's site port (4180)
#   GATEWAY_ADMIN_PORT             the gateway's admin endpoint (4119)
#   BIN_DIR                        where the binaries are built (bin/)
#   CIVICGATE_TEST_HYDRA_CACHE     the tests' Hydra cache (internal/testkit/testhydra),
#                                  used when it holds a build of tools/hydra
# Functions run from traps and from await: not unreachable.
# shellcheck disable=SC2317
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD

HYDRA_PORT=${HYDRA_PORT:-4444}
HYDRA_ADMIN_PORT=${HYDRA_ADMIN_PORT:-4445}
LIBRARY_PORT=${LIBRARY_PORT:-4100}
GATEWAY_PORT=${GATEWAY_PORT:-4180}
GATEWAY_ADMIN_PORT=${GATEWAY_ADMIN_PORT:-4119}
BIN_DIR=${BIN_DIR:-$ROOT/bin}
case $BIN_DIR in /*) ;; *) BIN_DIR=$ROOT/$BIN_DIR ;; esac

ISSUER=http://127.0.0.1:$HYDRA_PORT/
HYDRA_ADMIN=http://127.0.0.1:$HYDRA_ADMIN_PORT
GATEWAY=http://127.0.0.1:$GATEWAY_PORT
AUDIENCE=$GATEWAY/graphql
METADATA=$GATEWAY/.well-known/oauth-protected-resource/graphql
CLIENT_ID=library-member
SCOPE=library:member

# Hydra's build flags: those of internal/testkit/testhydra, whose cache is reused.
HYDRA_TAGS=sqlite,sqlite_omit_load_extension

say() { printf '==> %s\n' "$*"; }
fail() { printf 'run.sh: %s\n' "$*" >&2; exit 1; }

# A port another program holds would answer the readiness checks below in
# its place: refuse to start instead.
for port in "$HYDRA_PORT" "$HYDRA_ADMIN_PORT" "$LIBRARY_PORT" "$GATEWAY_PORT" "$GATEWAY_ADMIN_PORT"; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		fail "port $port on 127.0.0.1 is in use; choose others with HYDRA_PORT, HYDRA_ADMIN_PORT, LIBRARY_PORT, GATEWAY_PORT, GATEWAY_ADMIN_PORT"
	fi
done

# Everything the run writes lives in WORK_DIR — Hydra's SQLite file and
# configuration, the keys file, Caddy's autosave, the logs — removed at the
# end unless something failed.
WORK_DIR=$(mktemp -d "${TMPDIR:-/tmp}/civicgate-identity.XXXXXX")
hydra_pid='' library_pid='' gateway_pid='' sleeper_pid=''

# stop ends a process: SIGTERM, SIGKILL after 15 s, then reaps it.
stop() {
	local pid=$1 i
	[[ -n $pid ]] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 150; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

cleanup() {
	local status=$?
	trap - EXIT INT TERM
	if [[ -n $sleeper_pid ]]; then
		kill "$sleeper_pid" 2>/dev/null || true
		wait "$sleeper_pid" 2>/dev/null || true
	fi
	[[ -n $gateway_pid$library_pid$hydra_pid ]] && say "stopping civicgate, libraryd and Hydra"
	stop "$gateway_pid"
	stop "$library_pid"
	stop "$hydra_pid"
	if [[ $status -ne 0 && $status -ne 130 && $status -ne 143 ]]; then
		for log in "$WORK_DIR"/*.log; do
			[[ -s $log ]] || continue
			printf '\n--- last lines of %s\n' "$log" >&2
			tail -n 20 "$log" >&2
		done
		printf '\nrun.sh: failed; its files are kept in %s\n' "$WORK_DIR" >&2
	else
		rm -rf "$WORK_DIR"
		say "stopped"
	fi
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# await polls a condition for up to 60 s, failing at once if the process it
# waits for has ended.
await() {
	local what=$1 pid=$2 i
	shift 2
	for ((i = 0; i < 600; i++)); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		kill -0 "$pid" 2>/dev/null || fail "$what exited while starting"
		sleep 0.1
	done
	fail "$what did not get ready within 60 s"
}

# answers: the URL answers HTTP at all (any status).
answers() { [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$@") != 000 ]]; }

sha256() { if command -v sha256sum >/dev/null; then sha256sum; else shasum -a 256; fi; }

# hydra_key names a Hydra build as internal/testkit/testhydra.buildKey does: the tool
# module's go.mod and go.sum, the Go version, the platform and the tags.
hydra_key() {
	local name
	{
		for name in go.mod go.sum; do
			printf '%s %d\n' "$name" "$(wc -c <"tools/hydra/$name" | tr -d ' ')"
			cat "tools/hydra/$name"
		done
		printf '%s %s/%s tags=%s\n' "$(go env GOVERSION)" "$(go env GOOS)" "$(go env GOARCH)" "$HYDRA_TAGS"
	} | sha256 | cut -c1-16
}

# hydra_binary sets HYDRA to a Hydra built from tools/hydra: the tests' cache
# entry of the same build when there is one (internal/testkit/testhydra.Binary), else
# $BIN_DIR/hydra, built once per build key.
hydra_binary() {
	local key cache version
	key=$(hydra_key)
	cache=${CIVICGATE_TEST_HYDRA_CACHE:-}
	if [[ -z $cache ]]; then
		if [[ $(uname) == Darwin ]]; then cache=$HOME/Library/Caches; else cache=${XDG_CACHE_HOME:-$HOME/.cache}; fi
		cache=$cache/civicgate-testhydra
	fi
	if [[ -x $cache/$key/hydra ]]; then
		HYDRA=$cache/$key/hydra
		say "Hydra: the tests' build $HYDRA"
		return
	fi
	if [[ -x $BIN_DIR/hydra && $(cat "$BIN_DIR/hydra.key" 2>/dev/null) == "$key" ]]; then
		HYDRA=$BIN_DIR/hydra
		say "Hydra: $HYDRA, built before"
		return
	fi
	say "building Hydra into $BIN_DIR/hydra (minutes the first time; tools/hydra/README.md)"
	version=$(awk '$1 == "github.com/ory/hydra/v2" && $2 ~ /^v/ { print $2; exit }' tools/hydra/go.mod)
	GOWORK=off CGO_ENABLED=1 go build -C tools/hydra -tags "$HYDRA_TAGS" -buildvcs=false \
		-ldflags "-X github.com/ory/hydra/v2/driver/config.Version=$version" \
		-o "$BIN_DIR/hydra" github.com/ory/hydra/v2
	printf '%s\n' "$key" >"$BIN_DIR/hydra.key"
	HYDRA=$BIN_DIR/hydra
}

mkdir -p "$BIN_DIR"
say "building civicgate and libraryd into $BIN_DIR"
go build -o "$BIN_DIR/civicgate" ./cmd/civicgate
go build -o "$BIN_DIR/libraryd" ./examples/other-backend/cmd/libraryd
hydra_binary

# The secret the gateway signs X-Civic-Identity with and libraryd checks.
CIVIC_IDENTITY_SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
CLIENT_SECRET=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')

# Hydra: development mode (a plain-HTTP issuer on loopback), JWT access
# tokens, state in SQLite. Hydra reads any variable named after a setting
# (DSN, SERVE_PUBLIC_PORT, …) over its file, so it gets none of ours.
cat >"$WORK_DIR/hydra.yml" <<EOF
dsn: sqlite://$WORK_DIR/hydra.sqlite?_fk=true
serve:
  public: { host: 127.0.0.1, port: $HYDRA_PORT }
  admin: { host: 127.0.0.1, port: $HYDRA_ADMIN_PORT }
urls:
  self: { issuer: "$ISSUER", public: "$ISSUER" }
secrets:
  system: ["$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"]
strategies:
  access_token: jwt
log: { level: warn, leak_sensitive_values: false }
EOF
hydra_env=(env -i "HOME=$WORK_DIR" "TMPDIR=$WORK_DIR" "PATH=$PATH")
"${hydra_env[@]}" "$HYDRA" migrate sql up --read-from-env --yes --config "$WORK_DIR/hydra.yml" \
	>"$WORK_DIR/hydra-migrate.log" 2>&1 || fail "hydra migrate sql up failed"
rm "$WORK_DIR/hydra-migrate.log"
say "starting Hydra: issuer $ISSUER, admin $HYDRA_ADMIN"
"${hydra_env[@]}" "$HYDRA" serve all --dev --sqa-opt-out --config "$WORK_DIR/hydra.yml" \
	>"$WORK_DIR/hydra.log" 2>&1 &
hydra_pid=$!
await Hydra "$hydra_pid" curl -fs --max-time 2 "$HYDRA_ADMIN/health/ready"
await Hydra "$hydra_pid" curl -fs --max-time 2 "${ISSUER}health/ready"
# The key set too: Hydra makes its signing keys as it starts, which took over 10 s on a loaded machine, and
# civicgate fetches the key set as it loads (a failure fails the load).
await Hydra "$hydra_pid" curl -fs --max-time 10 "${ISSUER}.well-known/jwks.json"

say "starting libraryd on 127.0.0.1:$LIBRARY_PORT"
CIVIC_IDENTITY_SECRET=$CIVIC_IDENTITY_SECRET LIBRARY_LISTEN=127.0.0.1:$LIBRARY_PORT \
	"$BIN_DIR/libraryd" >"$WORK_DIR/libraryd.log" 2>&1 &
library_pid=$!
await libraryd "$library_pid" answers "http://127.0.0.1:$LIBRARY_PORT/graphql"

say "starting civicgate on $GATEWAY (admin localhost:$GATEWAY_ADMIN_PORT) with examples/identity/Caddyfile"
printf '{"keys":[]}\n' >"$WORK_DIR/keys.json"
CIVIC_IDENTITY_SECRET=$CIVIC_IDENTITY_SECRET KEYS_FILE=$WORK_DIR/keys.json \
	HYDRA_PORT=$HYDRA_PORT GATEWAY_PORT=$GATEWAY_PORT GATEWAY_ADMIN_PORT=$GATEWAY_ADMIN_PORT \
	LIBRARY_PORT=$LIBRARY_PORT SCHEMA_FILE=$ROOT/examples/other-backend/library.graphqls \
	XDG_CONFIG_HOME=$WORK_DIR XDG_DATA_HOME=$WORK_DIR \
	"$BIN_DIR/civicgate" run --config examples/identity/Caddyfile --adapter caddyfile \
	>"$WORK_DIR/civicgate.log" 2>&1 &
gateway_pid=$!
await civicgate "$gateway_pid" answers "$AUDIENCE"

# A client of the client-credentials grant (a service, no user): it may ask
# for this API as audience and for the scope that maps to the member tier.
say "registering OAuth client $CLIENT_ID (client credentials, scope $SCOPE, audience $AUDIENCE)"
curl -fsS -o /dev/null "$HYDRA_ADMIN/admin/clients" -H 'Content-Type: application/json' -d @- <<EOF ||
{"client_id": "$CLIENT_ID", "client_secret": "$CLIENT_SECRET",
 "grant_types": ["client_credentials"], "token_endpoint_auth_method": "client_secret_basic",
 "access_token_strategy": "jwt", "audience": ["$AUDIENCE"], "scope": "$SCOPE"}
EOF
	fail "Hydra refused the client"

token_curl="curl -s -u $CLIENT_ID:$CLIENT_SECRET ${ISSUER}oauth2/token \\
  -d grant_type=client_credentials -d scope=$SCOPE -d audience=$AUDIENCE"
say "fetching an access token:"
printf '\n%s\n\n' "$token_curl"
token_json=$(curl -fsS -u "$CLIENT_ID:$CLIENT_SECRET" "${ISSUER}oauth2/token" \
	-d grant_type=client_credentials -d "scope=$SCOPE" --data-urlencode "audience=$AUDIENCE") ||
	fail "Hydra issued no token"
TOKEN=$(printf '%s' "$token_json" | sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
[[ -n $TOKEN ]] || fail "Hydra's answer holds no access_token"

# query_curl prints a pasteable curl of the GraphQL document $1 (JSON-quoted).
query_curl() {
	printf "curl -s %s \\\\\n  -H 'Authorization: Bearer %s' \\\\\n  -H 'Content-Type: application/json' \\\\\n  -d '{\"query\":\"%s\"}'\n" \
		"$AUDIENCE" "$TOKEN" "$1"
}
# query runs it and prints the body and the status, which must be $2.
query() {
	local answer status
	answer=$(curl -s -w '\n%{http_code}' "$AUDIENCE" -H "Authorization: Bearer $TOKEN" \
		-H 'Content-Type: application/json' -d "{\"query\":\"$1\"}")
	status=${answer##*$'\n'}
	printf '%s (HTTP %s)\n' "${answer%$'\n'*}" "$status"
	[[ $status == "$2" ]] || fail "the gateway answered HTTP $status, want $2 (its log: $WORK_DIR/civicgate.log)"
}

books='{ books(first: 2) { nodes { title author { name } } } }'
loans='{ loans(memberId: \"m1\") { due } }'

say "querying the library with the token (member tier: family catalog); paste this to try it:"
printf '\n'
query_curl "$books"
printf '\n'
query "$books" 200
printf '\n'
say "a family the member tier lacks (loans) is refused before it reaches libraryd:"
printf '\n'
query_curl "$loans"
printf '\n'
query "$loans" 403
printf '\n'
say "without a token, the 401 names the RFC 9728 metadata:"
printf '\n'
curl -s -D - -o /dev/null "$AUDIENCE" -H 'Content-Type: application/json' -d '{}' | grep -i '^www-authenticate' | tr -d '\r'
printf '\n'
say "the RFC 9728 protected resource metadata (where clients learn the issuer and scopes):"
printf '\ncurl -s %s\n\n' "$METADATA"
curl -s "$METADATA"
printf '\n\n'
say "logs in $WORK_DIR; metrics: curl -s localhost:$GATEWAY_ADMIN_PORT/metrics | grep civicgate_auth_jwt"
printf 'ready: civicgate %s, Hydra %s, libraryd 127.0.0.1:%s (pids %s %s %s); Ctrl-C stops them\n' \
	"$GATEWAY" "$ISSUER" "$LIBRARY_PORT" "$gateway_pid" "$hydra_pid" "$library_pid"

# In the foreground until Ctrl-C (the INT trap) or until one of them ends.
# A sleep in the background and `wait` let the trap run at once.
while kill -0 "$gateway_pid" 2>/dev/null && kill -0 "$library_pid" 2>/dev/null && kill -0 "$hydra_pid" 2>/dev/null; do
	sleep 1 &
	sleeper_pid=$!
	wait "$sleeper_pid" || true
	sleeper_pid=''
done
fail "a process ended by itself; see its log in $WORK_DIR"
