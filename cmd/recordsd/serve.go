package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/civicgate/civicgate/backend/cursor"
	"github.com/civicgate/civicgate/backend/httpapi"
	"github.com/civicgate/civicgate/backend/migrations"
	"github.com/civicgate/civicgate/backend/store"
	"github.com/civicgate/civicgate/internal/telemetry"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// openPool opens the primary's pool (DATABASE_URL): migrations, seed, sync and, without replicas, every read.
func openPool(ctx context.Context) (*pgxpool.Pool, error) { return openPrimary(ctx, nil) }

// openPrimary is openPool with tracer (nil: none) on every connection.
func openPrimary(ctx context.Context, tracer pgx.QueryTracer) (*pgxpool.Pool, error) {
	dsn := os.Getenv("DATABASE_URL")
	if dsn == "" {
		return nil, errors.New("DATABASE_URL is not set")
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, errors.New("DATABASE_URL is not a valid PostgreSQL DSN") // never echo the DSN
	}
	store.ConfigurePool(cfg)
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database pool: %w", err)
	}
	return pool, nil
}

// replicaConnectTimeout bounds connecting to a replica unless its DSN sets connect_timeout, so a read sent to a
// replica that vanished falls back to the primary well within the request's time budget.
const replicaConnectTimeout = 2 * time.Second

// openReplicas opens one pool per DATABASE_READ_URL DSN (docs/read-replicas.md) and the router that sends reads
// to them; nil when the variable is unset or blank (every read on the primary, as before). The pools connect
// lazily: a replica that is down at start is skipped by the checker, not fatal. Neither a DSN nor a part of one is
// ever echoed.
func openReplicas(ctx context.Context, primary *pgxpool.Pool, tracer pgx.QueryTracer) (*store.Replicas, func(), error) {
	dsns := store.SplitReadURLs(os.Getenv("DATABASE_READ_URL"))
	if len(dsns) == 0 {
		return nil, func() {}, nil
	}
	maxLag := store.DefaultMaxLag
	if v := os.Getenv("DATABASE_READ_MAX_LAG"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, nil, errors.New("DATABASE_READ_MAX_LAG must be a positive duration such as 5s or 500ms")
		}
		maxLag = d
	}
	lagOnly := false
	switch v := os.Getenv("DATABASE_READ_CONSISTENCY"); v {
	case "", "feed":
	case "lag":
		lagOnly = true
	default:
		return nil, nil, errors.New("DATABASE_READ_CONSISTENCY must be feed (the default) or lag")
	}
	var reps []store.Replica
	closeAll := func() {
		for _, r := range reps {
			r.Pool.Close()
		}
	}
	for i, dsn := range dsns {
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("DATABASE_READ_URL entry %d of %d is not a valid PostgreSQL DSN", i+1, len(dsns))
		}
		store.ConfigurePool(cfg)
		if cfg.ConnConfig.ConnectTimeout == 0 {
			cfg.ConnConfig.ConnectTimeout = replicaConnectTimeout
		}
		cfg.ConnConfig.Tracer = tracer
		name := fmt.Sprintf("%d (%s)", i+1, net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))))
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("open read replica pool %d: %w", i+1, err)
		}
		reps = append(reps, store.Replica{Name: name, Pool: pool})
	}
	consistency := "feed"
	if lagOnly {
		consistency = "lag"
	}
	slog.Info("read replicas configured", "replicas", len(reps), "max_lag", maxLag.String(), "consistency", consistency)
	opts := store.ReplicaOptions{MaxLag: maxLag, LagOnly: lagOnly, Logger: slog.Default()}
	return store.NewReplicas(primary, reps, opts), closeAll, nil
}

func runMigrate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	pool, err := openPool(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	applied, err := migrations.ApplyVersions(ctx, pool)
	if err != nil {
		return err
	}
	slog.Info("migrations applied", "versions", applied)
	return nil
}

func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	listen := fs.String("listen", cmp.Or(os.Getenv("RECORDSD_LISTEN"), "127.0.0.1:8081"), "listen address (env RECORDSD_LISTEN)")
	dev := fs.Bool("dev-insecure-no-identity", false, "serve without requiring X-Civic-Identity (development only)")
	timeout := fs.Duration("query-timeout", 10*time.Second, "per-request database time budget")
	migrate := fs.Bool("migrate", false, "apply migrations before serving")
	reference := fs.Bool("reference-executor", os.Getenv("RECORDSD_REFERENCE_EXECUTOR") == "1",
		"answer every GraphQL operation with gqlgen's executor, no compiled plans (env RECORDSD_REFERENCE_EXECUTOR=1)")
	metricsListen := fs.String("metrics-listen", os.Getenv("RECORDSD_METRICS_LISTEN"),
		"listen address of GET /metrics, Prometheus text (env RECORDSD_METRICS_LISTEN; empty: no metrics listener)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	tuneGC(os.Getenv)
	codec, err := cursor.New([]byte(os.Getenv("RECORDSD_CURSOR_SECRET")))
	if err != nil {
		return fmt.Errorf("RECORDSD_CURSOR_SECRET: %w", err)
	}
	idSecret := []byte(os.Getenv("CIVIC_IDENTITY_SECRET"))
	if *dev {
		slog.Warn("--dev-insecure-no-identity: requests are served WITHOUT a gateway identity")
	} else if len(idSecret) < 32 {
		return errors.New("CIVIC_IDENTITY_SECRET must be set (≥ 32 bytes), or pass --dev-insecure-no-identity")
	}
	// Tracing (internal/telemetry; off unless RECORDSD_TRACING or CIVICGATE_TRACING is on): the server, GraphQL
	// and SQL spans of every pool, primary and replicas.
	tp, shutdownTracing, err := telemetry.Setup(ctx, "recordsd")
	if err != nil {
		return err
	}
	defer flushTraces(shutdownTracing) // after the server and the pools (defers run last-in first-out)
	tracer := telemetry.NewQueryTracer(tp)
	pool, err := openPrimary(ctx, tracer)
	if err != nil {
		return err
	}
	defer pool.Close()
	if *migrate {
		if err := migrations.Apply(ctx, pool); err != nil {
			return err
		}
	}
	replicas, closeReplicas, err := openReplicas(ctx, pool, tracer)
	if err != nil {
		return err
	}
	defer closeReplicas()
	var storeOpts []store.Option
	if replicas != nil {
		stopChecks := replicas.Start(ctx)
		defer stopChecks() // before the pools close (defers run last-in first-out)
		storeOpts = append(storeOpts, store.WithReplicas(replicas))
	}
	api, err := httpapi.New(httpapi.Config{
		Store:                 store.New(pool, codec, storeOpts...),
		IdentitySecret:        idSecret,
		DevInsecureNoIdentity: *dev,
		QueryTimeout:          *timeout,
		ReferenceExecutor:     *reference,
		Logger:                slog.Default(),
		TracerProvider:        tp,
	})
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           api.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      *timeout + 10*time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	ln = httpapi.ConfigureServer(srv, ln) // each response in one write (docs/design.md D59)
	// Metrics on a listener of their own (docs/design.md D42): the API's listener, the one the gateway proxies
	// to, never serves them.
	var metricsSrv *http.Server
	var metricsLn net.Listener
	if *metricsListen != "" {
		metricsLn, err = net.Listen("tcp", *metricsListen)
		if err != nil {
			ln.Close()
			return fmt.Errorf("metrics listen (RECORDSD_METRICS_LISTEN): %w", err)
		}
		metricsSrv = &http.Server{
			Handler:           metricsMux(api.MetricsHandler()),
			ReadHeaderTimeout: 5 * time.Second,
			WriteTimeout:      30 * time.Second,
			ErrorLog:          slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn),
		}
	}
	slog.Info("recordsd serving", "addr", ln.Addr().String())
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	if metricsSrv != nil {
		slog.Info("recordsd metrics serving", "addr", metricsLn.Addr().String(), "path", "/metrics")
		go func() { errc <- metricsSrv.Serve(metricsLn) }()
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if metricsSrv != nil {
		_ = metricsSrv.Shutdown(shutdownCtx)
	}
	return srv.Shutdown(shutdownCtx)
}

// metricsMux serves metrics at exactly /metrics (GET or HEAD) and a JSON 404 elsewhere.
func metricsMux(metrics http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"Not Found"}`))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusMethodNotAllowed)
			_, _ = w.Write([]byte(`{"error":"Method Not Allowed"}`))
			return
		}
		metrics.ServeHTTP(w, r)
	})
}
