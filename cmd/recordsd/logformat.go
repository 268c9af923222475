package main

import (
	"io"
	"log/slog"
	"strings"
	"time"
)

// newLogHandler is recordsd's log format, the gateway's (Caddy's zap JSON):
// {"level":"info","ts":<unix seconds>,"logger":"recordsd","msg":…, …} — one
// format for both processes, so one log pipeline reads both
// (docs/operations.md "Metrics, logs and health"; recordsd once wrote "INFO"
// and RFC 3339 "time").
func newLogHandler(w io.Writer) slog.Handler {
	return slog.NewJSONHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.LevelKey:
				return slog.String("level", strings.ToLower(a.Value.String()))
			case slog.TimeKey:
				t := a.Value.Time()
				return slog.Float64("ts", float64(t.UnixNano())/float64(time.Second))
			}
			return a
		},
	}).WithAttrs([]slog.Attr{slog.String("logger", "recordsd")})
}
