// Package httpapi is recordsd's HTTP surface: POST /graphql (with the error policy of docs/api.md "Errors"),
// GET /bills, GET /healthz, and the gateway-identity requirement (docs/design.md D9).
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"runtime"
	"time"

	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/civicgate/civicgate/backend/graph"
	"github.com/civicgate/civicgate/backend/readplan"
	"github.com/civicgate/civicgate/backend/store"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator/rules"
	"go.opentelemetry.io/otel/trace"

	"github.com/civicgate/civicgate/internal/intscalar"
	"github.com/civicgate/civicgate/internal/telemetry"
	"github.com/civicgate/civicgate/modules/contract"
)

// Config configures a Server.
type Config struct {
	Store *store.Store
	// IdentitySecret verifies X-Civic-Identity (≥ 32 bytes) unless DevInsecureNoIdentity.
	IdentitySecret []byte
	// DevInsecureNoIdentity serves requests without a gateway identity (explicit dev mode only).
	DevInsecureNoIdentity bool
	// QueryTimeout bounds one request's database work (default 10 s).
	QueryTimeout time.Duration
	// MaxBodyBytes bounds a /graphql body (default 1 MiB).
	MaxBodyBytes int64
	Logger       *slog.Logger
	// Now is the clock for identity expiry (default time.Now).
	Now func() time.Time
	// TracerProvider, when it can record (internal/telemetry.Setup with tracing on), makes a server span per
	// request (continuing the caller's W3C traceparent), a graphql.operation span and a graphql.resolve span
	// per root field. Nil or a no-op provider: no tracing work at all.
	TracerProvider trace.TracerProvider
	// ReferenceExecutor answers every GraphQL operation with gqlgen's executor, never a compiled plan
	// (docs/design.md D51; recordsd's compiled read path is on by default).
	ReferenceExecutor bool
}

// Server serves recordsd's HTTP API.
type Server struct {
	cfg     Config
	exec    *executor.Executor
	schema  *ast.Schema
	log     *slog.Logger
	metrics *metrics
	// plans caches compiled operations (compiled.go); nil with Config.ReferenceExecutor.
	plans *readplan.Cache
	// tracer makes the compiled path's spans; nil when tracing is off.
	tracer trace.Tracer
	// verified keeps the claims of identity assertions that verified (identity_cache.go).
	verified *verifiedCache
}

// New validates cfg and builds a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("httpapi: no store")
	}
	if !cfg.DevInsecureNoIdentity && len(cfg.IdentitySecret) < 32 {
		return nil, errors.New("httpapi: identity secret must be at least 32 bytes (or use dev mode without identity)")
	}
	if cfg.QueryTimeout <= 0 {
		cfg.QueryTimeout = 10 * time.Second
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, log: cfg.Logger, verified: newVerifiedCache()}
	es := graph.NewExecutableSchema(graph.Config{Resolvers: &graph.Resolver{Store: cfg.Store}})
	s.schema = es.Schema()
	s.exec = executor.New(es)
	s.exec.SetDefaultRulesFn(func() *rules.Rules {
		r := rules.NewDefaultRules()
		r.AddRule(intscalar.RuleName, intscalar.Rule.RuleFunc) // Int is 32 bits; gqlparser lets any int64 through
		return r
	})
	s.exec.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	s.exec.Use(extension.Introspection{}) // introspection is allowed (docs/design.md D6); the gateway may restrict it
	s.exec.SetErrorPresenter(s.presentError)
	s.exec.SetRecoverFunc(s.recoverPanic)
	s.metrics = newMetrics(s.schema, cfg.Store)
	s.exec.Use(metricsExtension{s.metrics})
	if telemetry.Enabled(cfg.TracerProvider) {
		s.tracer = cfg.TracerProvider.Tracer(tracerName)
		s.exec.Use(newTracingExtension(s.tracer, s.schema))
	}
	if !cfg.ReferenceExecutor {
		s.plans = readplan.NewCache(planCacheEntries, planCacheBytes)
	}
	return s, nil
}

// Handler returns the routed handler. Routing is by the exact path: no
// cleaning, no redirects (http.ServeMux would answer "//bills" or
// "/bills/../bills" with an HTML 307), so every answer is JSON and a path the
// gateway let through is served only if it is exactly one of ours.
func (s *Server) Handler() http.Handler {
	graphqlH := s.requireIdentity(http.HandlerFunc(s.graphql))
	billsH := s.requireIdentity(http.HandlerFunc(s.bills))
	runtimeH := s.requireIdentity(http.HandlerFunc(s.runtimeStats))
	return oneWrite(s.traced(s.measured(s.recoverHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			s.healthz(w, r)
		case "/graphql":
			graphqlH.ServeHTTP(w, r)
		case "/bills":
			billsH.ServeHTTP(w, r)
		case "/debug/runtime":
			runtimeH.ServeHTTP(w, r)
		default:
			writeBody(w, http.StatusNotFound, contract.BodyNotFound)
		}
	})))))
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.cfg.Store.Ping(ctx); err != nil {
		s.log.Warn("healthz: database unavailable", "cause", safeCause(err))
		writeBody(w, http.StatusServiceUnavailable, bodyDatabaseUnavailable)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// runtimeStats answers GET /debug/runtime with the process's goroutine count
// and Go heap figures, for soak tests and operators watching for leaks. It
// needs a gateway identity like the data routes (the gateway never routes a
// client here: it forwards only /graphql and /bills).
func (s *Server) runtimeStats(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeErrors(w, http.StatusMethodNotAllowed, "Use GET")
		return
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	writeJSON(w, http.StatusOK, map[string]uint64{
		"goroutines":      uint64(runtime.NumGoroutine()),
		"heap_alloc":      m.HeapAlloc,
		"heap_objects":    m.HeapObjects,
		"sys":             m.Sys,
		"num_gc":          uint64(m.NumGC),
		"pool_total_conn": uint64(s.cfg.Store.PoolTotalConns()),
	})
}

// recoverHTTP turns a panic outside gqlgen's execution into the opaque 500.
func (s *Server) recoverHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic serving request", "path", r.URL.Path, "panic", panicString(v))
				writeInternalError(w)
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// recordsd's own {"error":…} bodies; the client-facing ones are the
// gateway's (contract.Body*, docs/api.md "Errors"). Read-only.
var (
	bodyDatabaseUnavailable = contract.ErrorBody("Database unavailable")
	bodyMissingIdentity     = contract.ErrorBody("Missing gateway identity")
)

// bodyWriter writes every JSON response of recordsd: with nosniff and its length (docs/design.md D58).
var bodyWriter = contract.JSONWriter{NoSniff: true, ContentLength: true}

// writeBody writes a body already encoded.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	bodyWriter.Write(w, status, body)
}

// writeJSON encodes v (encoding/json, HTML escaping on) and writes it.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, contract.BodyInternal
	}
	writeBody(w, status, b)
}

func writeInternalError(w http.ResponseWriter) {
	writeBody(w, http.StatusInternalServerError, contract.BodyInternal)
}

// writeErrors answers {"errors":[{"message":msg}]}, msg HTML-escaped as
// encoding/json has always written it here.
func writeErrors(w http.ResponseWriter, status int, msg string) {
	writeBody(w, status, contract.MessageBodyHTMLEscaped(msg))
}

// safeCause describes err for logs without SQL text or values: PostgreSQL errors are reduced to their
// SQLSTATE, everything else is our own wrapped message.
func safeCause(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return "postgres error SQLSTATE " + pgErr.Code
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "deadline exceeded: " + err.Error()
	}
	return err.Error()
}

// logFault logs a request's server fault at error level — unless the client
// went away (its context was cancelled, e.g. the gateway was killed or gave
// up): the work was abandoned, nothing is wrong with the service, and an
// error-level line per abandoned request would drown real faults.
func (s *Server) logFault(ctx context.Context, msg string, err error, attrs ...any) {
	attrs = append(attrs, "cause", safeCause(err))
	if errors.Is(err, context.Canceled) && errors.Is(context.Cause(ctx), context.Canceled) {
		s.log.Info(msg+" (client went away)", attrs...)
		return
	}
	s.log.Error(msg, attrs...)
}

func panicString(v any) string {
	if err, ok := v.(error); ok {
		return safeCause(err)
	}
	if s, ok := v.(string); ok {
		return s
	}
	return "non-error panic value"
}
