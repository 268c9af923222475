# civicgate — see README.md. The two commands: `make up` and `make test`.
SHELL := /usr/bin/env bash
GO ?= go
BIN := bin
GOTESTFLAGS ?=
# Every package's caddytest servers use their own admin port, so packages may run in parallel.
# TEST_TIMEOUT is go test's hang detector per package binary, not a wait: the whole-stack packages
# (e2e, reliability) took 23–25 minutes under the race detector on a 2-core VM about twice as slow as
# the one 30m was set on, too close to it.
TEST_TIMEOUT ?= 45m

.PHONY: import-real all build up test check lint vet fmt-check staticcheck services browser bench bench-backend bench-modules fuzz clean

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -buildvcs=auto -o $(BIN)/civicgate ./cmd/civicgate
	$(GO) build -buildvcs=auto -o $(BIN)/recordsd ./cmd/recordsd

services:
	@scripts/services.sh all

## browser: headless Chromium for the browser tests (internal/testkit/testbrowser); make test needs it, make up does not.
browser:
	@scripts/services.sh chromium

## up: build, start PostgreSQL and Redis, migrate, seed, serve (foreground; Ctrl-C stops it all). Quiet: the
## logs go to .civicgate/logs/ (the banner names them); CIVICGATE_UP_VERBOSE=1 make up prints them instead.
up: build services
	@scripts/up.sh

## test: every test, with the race detector, against real PostgreSQL and Redis (started if needed).
# The two packages of whole-stack tests (minutes each, mostly waiting on their processes) go first and
# TESTP (default 4) lets two more packages build and run beside them: go test's -p bounds test runs as well
# as builds, and its default (the number of cores) left both slots to them while the rest queued.
# CIVICGATE_TEST_BINDIR (internal/testkit/stack) makes every package that starts civicgate or recordsd share one
# build of each per run. The fuzz step (make fuzz) runs beside the tests, on the CPU the whole-stack tests
# leave idle while they wait on their processes; its output is printed after theirs, and either failing
# fails the run. -count=1: every test runs on every run — go test would otherwise replay a cached pass of
# a package whose files did not change, though the services it talks to did.
TESTP ?= 4
test: services browser lint
	@bindir=$$(mktemp -d); fuzzlog=$$(mktemp); trap 'rm -rf "$$bindir" "$$fuzzlog"' EXIT; \
	FUZZTIME=$(FUZZTIME) GO=$(GO) scripts/fuzz.sh >"$$fuzzlog" 2>&1 & fuzzpid=$$!; \
	echo "$(GO) test -race -count=1 -p $(TESTP) -timeout $(TEST_TIMEOUT) $(GOTESTFLAGS) ./reliability/ ./e2e/ ./... (make fuzz beside it)"; \
	CIVICGATE_TEST_BINDIR=$$bindir $(GO) test -race -count=1 -p $(TESTP) -timeout $(TEST_TIMEOUT) $(GOTESTFLAGS) ./reliability/ ./e2e/ ./...; \
	rc=$$?; wait $$fuzzpid; frc=$$?; cat "$$fuzzlog"; \
	if [ $$rc != 0 ]; then echo "make test: go test failed"; fi; \
	if [ $$frc != 0 ]; then echo "make test: make fuzz failed"; fi; \
	[ $$rc = 0 ] && [ $$frc = 0 ]

## check: the fast tier to run before every commit: gofmt, vet, staticcheck and every test that needs no service
## (go test -short: tests that need PostgreSQL, Redis, a browser or the whole stack skip; make test runs them).
## Starts nothing. CHECKFLAGS adds go test flags (e.g. -race).
CHECKFLAGS ?=
check: lint
	$(GO) test -short -timeout 10m $(CHECKFLAGS) ./...

## fuzz: every fuzz target for FUZZTIME (default 5s) each, FUZZJOBS (2) packages at a time; a crasher lands in
## testdata/fuzz — commit it.
FUZZTIME ?= 5s
fuzz:
	@FUZZTIME=$(FUZZTIME) GO=$(GO) scripts/fuzz.sh

## soak: mixed traffic for SOAK (default 10m) against the real stack; memory and goroutines must stay flat.
SOAK ?= 10m
soak: services
	CIVICGATE_SOAK=$(SOAK) $(GO) test -race -run '^TestSoak$$' -count=1 -v -timeout 2h ./reliability

lint: fmt-check vet staticcheck

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(GO) tool staticcheck ./...

## bench: every benchmark, through its one entry point bench/run.sh (today's figures: BENCHMARKS.md; every run's report:
## docs/benchmarks-log.md, both written by bench/report.sh). BENCH picks the suites, space- or comma-separated:
## side-by-side (gateway vs bare Caddy vs recordsd direct), gateway (the gateway's Go benchmarks: handler chain, auth, rate limit, guard),
## opcount (what counting each request's operation adds, paired with the same route without it), mcp (a stateless
## MCP tools/call paired with a session call, and a refusal from the headers), modules (every
## module's Go benchmarks), backend (recordsd over 1M bills; BENCH_FRESH=1 re-seeds), all. Empty: side-by-side,
## gateway, opcount, unique-vars. `bench/run.sh --help` lists the suites and their BENCH_* settings.
BENCH ?=
bench: build services
	@GO=$(GO) bench/run.sh $(BENCH)

## bench-backend, bench-modules: the names the backend and modules suites had before bench/run.sh.
bench-backend: build services
	@GO=$(GO) bench/run.sh backend

bench-modules: services
	@GO=$(GO) bench/run.sh modules

## import-real: import real upstream files from DATA (default: the development machines' copy beside the
## repository, ../shared/data) into a throwaway database; docs/operations.md "Importing real upstream files".
DATA ?=
import-real: build services
	@scripts/import-real.sh "$(DATA)"

clean:
	rm -rf $(BIN)
