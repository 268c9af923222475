// Package usageexport is the Caddy app civic_usage_export: a worker that
// sends each API key's usage per closed hour to a metering sink as
// CloudEvents (docs/design.md D73). The work is modules/usageexport/export;
// this package reads the configuration and starts and stops the worker.
package usageexport

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/collectors"
	"github.com/civicgate/civicgate/modules/usageexport/export"
	"github.com/civicgate/civicgate/modules/usageexport/hours"
)

func init() {
	caddy.RegisterModule(App{})
}

// App is the civic_usage_export app. Every string may hold {env.*}
// placeholders, resolved once at provision.
type App struct {
	Database string `json:"database,omitempty"`
	Sink     string `json:"sink,omitempty"`
	// AuthHeader and AuthValue: a header sent with every batch, e.g.
	// Authorization and "Bearer {env.OPENMETER_TOKEN}"; never logged.
	AuthHeader string         `json:"auth_header,omitempty"`
	AuthValue  string         `json:"auth_value,omitempty"`
	Source     string         `json:"source,omitempty"`   // every event's source; default export.DefaultSource
	Interval   caddy.Duration `json:"interval,omitempty"` // default 1m
	Settle     caddy.Duration `json:"settle,omitempty"`   // default 2m, at least 10s
	Timeout    caddy.Duration `json:"timeout,omitempty"`  // per POST; default 30s
	Batch      int            `json:"batch,omitempty"`    // events per POST; default 500
	// Since is the first hour exported when the cursor does not exist yet,
	// RFC 3339; default every hour the usage table holds.
	Since string `json:"since,omitempty"`

	pool     *pgxpool.Pool
	exporter *export.Exporter
	logger   *zap.Logger
	cancel   context.CancelFunc
	done     chan struct{}
}

// CaddyModule returns the Caddy module information.
func (App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "civic_usage_export", New: func() caddy.Module { return new(App) }}
}

// Provision resolves placeholders, checks the settings and builds the
// (lazily connecting) pool and the exporter. Errors never echo the DSN, the
// sink URL or the header's value: they may hold secrets.
func (a *App) Provision(ctx caddy.Context) error {
	a.logger = ctx.Logger()
	repl := caddy.NewReplacer()
	dsn, sink := repl.ReplaceAll(a.Database, ""), repl.ReplaceAll(a.Sink, "")
	if dsn == "" {
		return errors.New("civic_usage_export: database is empty (set it from an {env.*} placeholder)")
	}
	if sink == "" {
		return errors.New("civic_usage_export: sink is empty (an http or https URL, possibly from an {env.*} placeholder)")
	}
	if u, err := url.Parse(sink); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return errors.New("civic_usage_export: sink is not an http or https URL") // not echoed: it may hold a token
	}
	if a.AuthHeader != "" && !validHeaderName(a.AuthHeader) {
		return fmt.Errorf("civic_usage_export: auth_header %q is not a header name", a.AuthHeader)
	}
	authValue := repl.ReplaceAll(a.AuthValue, "")
	if strings.ContainsAny(authValue, "\r\n") {
		return errors.New("civic_usage_export: auth_header's value holds a line break")
	}
	if a.AuthHeader != "" && authValue == "" {
		return fmt.Errorf("civic_usage_export: auth_header %s: the value resolves to nothing (set its environment variable)", a.AuthHeader)
	}
	var since time.Time
	if a.Since != "" {
		var err error
		if since, err = time.Parse(time.RFC3339, a.Since); err != nil {
			return fmt.Errorf("civic_usage_export: since %q is not an RFC 3339 time", a.Since)
		}
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return errors.New("civic_usage_export: cannot parse the database DSN") // it may hold a password: not echoed
	}
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > 5*time.Second {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	cfg.MaxConns = 3
	if a.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil { // connects lazily
		return fmt.Errorf("civic_usage_export: database: %w", err)
	}
	m, err := registerMetrics(ctx)
	if err != nil {
		return err
	}
	a.exporter, err = export.New(export.Config{
		Pool:        a.pool,
		Source:      hours.Usage{Pool: a.pool},
		Sink:        &export.Sink{URL: sink, Header: a.AuthHeader, Value: authValue, Timeout: time.Duration(a.Timeout)},
		EventSource: repl.ReplaceAll(a.Source, ""),
		Interval:    time.Duration(a.Interval),
		Settle:      time.Duration(a.Settle),
		Batch:       a.Batch,
		Since:       since,
		Metrics:     m,
		Logger:      a.logger,
	})
	if err != nil {
		return fmt.Errorf("civic_usage_export: %w", err)
	}
	return nil
}

// validHeaderName reports whether name is an HTTP header name (RFC 9110
// token characters).
func validHeaderName(name string) bool {
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return name != ""
}

// registerMetrics registers the exporter's collectors in the configuration's
// registry, the same ones across reloads (internal/collectors).
func registerMetrics(ctx caddy.Context) (*export.Metrics, error) {
	m := export.NewMetrics()
	reg := ctx.GetMetricsRegistry()
	var err error
	if m.Lag, err = collectors.Register(reg, m.Lag); err != nil {
		return nil, fmt.Errorf("civic_usage_export: metrics: %w", err)
	}
	if m.Events, err = collectors.Register(reg, m.Events); err != nil {
		return nil, fmt.Errorf("civic_usage_export: metrics: %w", err)
	}
	if m.Failures, err = collectors.Register(reg, m.Failures); err != nil {
		return nil, fmt.Errorf("civic_usage_export: metrics: %w", err)
	}
	return m, nil
}

// Start starts the worker: it creates or upgrades the tables (retried every
// interval while the database is away), then exports until Stop. Requests
// never wait on it.
func (a *App) Start() error {
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel, a.done = cancel, make(chan struct{})
	go func() {
		defer close(a.done)
		if !a.migrate(ctx) {
			return
		}
		a.exporter.Run(ctx)
	}()
	return nil
}

// migrate runs the migrations until they succeed or ctx ends, logging the
// first failure only.
func (a *App) migrate(ctx context.Context) bool {
	for failures := 0; ; failures++ {
		mctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := hours.Migrate(mctx, a.pool)
		cancel()
		if err == nil {
			return true
		}
		if failures == 0 && ctx.Err() == nil {
			a.logger.Warn("civic_usage_export: cannot create or upgrade the export tables yet; retrying", zap.String("error", "database unavailable or not writable"))
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(cmp.Or(time.Duration(a.Interval), export.DefaultInterval)):
		}
	}
}

// Stop stops the worker; a batch in flight is abandoned before its commit
// and sent again by the next run, under the same ids.
func (a *App) Stop() error {
	if a.cancel != nil {
		a.cancel()
		<-a.done
		a.cancel = nil
	}
	return nil
}

// Cleanup closes the pool.
func (a *App) Cleanup() error {
	if a.pool != nil {
		a.pool.Close()
	}
	return nil
}

// Interface guards
var (
	_ caddy.App          = (*App)(nil)
	_ caddy.Provisioner  = (*App)(nil)
	_ caddy.CleanerUpper = (*App)(nil)
)
