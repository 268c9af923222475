# Sourced by bench/subscriptions.sh and bench/unique-vars.sh: the setup both
# share — a work directory removed on exit (with every process in pids), the
# environment of bench/Caddyfile.library-{plain,gateway,gateway-mux}, the bench
# key, wait_port, start_proxies and start_mux. Needs: root (the repository), base (the suite's port base),
# LOADER (the bench/cmd tool to build) and BEARER_VAR (the variable the
# loader reads the key from).
work=$(mktemp -d)
pids=()
cleanup() {
	trap - INT TERM EXIT
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup INT TERM EXIT

export XDG_DATA_HOME="$work/data" XDG_CONFIG_HOME="$work/config"
export BENCH_KEYS_FILE="$work/keys.json"
export BENCH_LIB_SCHEMA="$root/examples/other-backend/library.graphqls"
export BENCH_LIB_UPSTREAM="127.0.0.1:$((base + 1))"
CIVIC_IDENTITY_SECRET=$(head -c 48 /dev/urandom | base64 | tr -d '=+/\n' | head -c 43)
export CIVIC_IDENTITY_SECRET

log "building bin/civicgate, bin/$LOADER"
go build -o bin/civicgate ./cmd/civicgate
go build -o "bin/$LOADER" "./bench/cmd/$LOADER"
bearer=$(bin/civicgate keys issue --org bench --tier bench --env live --file "$BENCH_KEYS_FILE" 2>/dev/null | grep -oE 'cg_live_[0-9A-Za-z]+' | head -1)
if [ -z "$bearer" ]; then log "could not issue the bench key"; exit 1; fi
export "$BEARER_VAR=$bearer"

wait_port() {
	for _ in $(seq 1 200); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.05
	done
	log "nothing listens on $1"; return 1
}

# start_proxies SUFFIX starts the plain and the gateway civicgate on base+2
# and base+3 (admin base+4, base+5), logs in $work/{plain,gateway}SUFFIX.log,
# sets plain_pid and gateway_pid and waits until both listen.
start_proxies() {
	BENCH_LIB_PORT=$((base + 2)) BENCH_LIB_ADMIN="127.0.0.1:$((base + 4))" \
		bin/civicgate run --config bench/Caddyfile.library-plain --adapter caddyfile >"$work/plain$1.log" 2>&1 &
	plain_pid=$!
	pids+=("$plain_pid")
	BENCH_LIB_PORT=$((base + 3)) BENCH_LIB_ADMIN="127.0.0.1:$((base + 5))" \
		bin/civicgate run --config bench/Caddyfile.library-gateway --adapter caddyfile >"$work/gateway$1.log" 2>&1 &
	gateway_pid=$!
	pids+=("$gateway_pid")
	wait_port $((base + 2))
	wait_port $((base + 3))
}

# start_mux SUFFIX starts the gateway of bench/Caddyfile.library-gateway-mux
# (graphql_guard terminates and multiplexes the sockets) on base+6 (admin
# base+7), logs in $work/gateway-muxSUFFIX.log, sets mux_pid and waits until
# it listens.
start_mux() {
	BENCH_LIB_PORT=$((base + 6)) BENCH_LIB_ADMIN="127.0.0.1:$((base + 7))" \
		bin/civicgate run --config bench/Caddyfile.library-gateway-mux --adapter caddyfile >"$work/gateway-mux$1.log" 2>&1 &
	mux_pid=$!
	pids+=("$mux_pid")
	wait_port $((base + 6))
}
