// Command recordsd is the PostgreSQL-backed legislative records GraphQL service fronted by civicgate.
//
//	recordsd serve   [--listen 127.0.0.1:8081] [--dev-insecure-no-identity]   (env DATABASE_URL, RECORDSD_CURSOR_SECRET, CIVIC_IDENTITY_SECRET, RECORDSD_LISTEN)
//	                 reads on standbys: DATABASE_READ_URL, DATABASE_READ_MAX_LAG, DATABASE_READ_CONSISTENCY (docs/read-replicas.md)
//	                 traces: RECORDSD_TRACING or CIVICGATE_TRACING=on and the OTEL_* variables (docs/tracing.md)
//	                 metrics: --metrics-listen / RECORDSD_METRICS_LISTEN serves GET /metrics on its own address
//	recordsd migrate                                                        (env DATABASE_URL)
//	recordsd seed    --scale small|medium|1m                                (see seed.go)
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// subcommand runs with the arguments after its name.
type subcommand func(ctx context.Context, args []string) error

// commands is the dispatcher. To add a subcommand, add one line here and a file in this directory.
var commands = map[string]subcommand{
	"serve":   runServe,
	"migrate": runMigrate,
	"seed":    runSeed, // implemented in seed.go (owned by the seed engineer)
	"sync":    runSync,
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	slog.SetDefault(slog.New(newLogHandler(os.Stderr)))
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	cmd, ok := commands[os.Args[1]]
	if !ok {
		usage()
		os.Exit(2)
	}
	if err := cmd(ctx, os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "recordsd %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "usage: recordsd <%s> [flags]\n", joinNames(names))
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += "|"
		}
		out += n
	}
	return out
}
