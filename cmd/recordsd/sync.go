package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/civicgate/civicgate/backend/mirror/command"
	"github.com/civicgate/civicgate/internal/telemetry"
	"golang.org/x/term"
)

// runSync: recordsd sync <family> (--file PATH | --url BASE) [flags] — see backend/mirror/README.md.
// With RECORDSD_TRACING=on (or CIVICGATE_TRACING=on) each run is traced (sync.run, sync.chunk spans) and its
// change events carry the chunk span's traceparent, which webhook delivery spans link to.
func runSync(ctx context.Context, args []string) error {
	cfg, err := command.Parse(args)
	if err != nil {
		return err
	}
	tp, shutdown, err := telemetry.Setup(ctx, "recordsd")
	if err != nil {
		return err
	}
	defer flushTraces(shutdown)
	cfg.TracerProvider = tp
	pool, err := openPool(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	return command.Run(ctx, pool, cfg, os.Stderr, term.IsTerminal(int(os.Stderr.Fd())))
}

// flushTraces exports the spans still queued, for at most 5 s (the collector may be away: exiting matters more).
func flushTraces(shutdown func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := shutdown(ctx); err != nil {
		slog.Warn("tracing: flushing spans at exit failed", "cause", err.Error())
	}
}
