package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/civicgate/civicgate/backend/store"
)

// recordsd's Prometheus metrics (docs/design.md D42, docs/operations.md "Metrics, logs and health"). Every label
// takes values from a fixed set — routes, status classes, the schema's root field names, pool and replica names
// from the configuration — so a client cannot grow the series. The request path pays one clock read and one
// histogram observation per request and per root field; the pools and replicas are read only when scraped.

// Route and status-class labels, indexed for the observers prepared at start.
var (
	metricRoutes  = [...]string{"/graphql", "/bills", "/healthz", "/debug/runtime", "other"}
	metricClasses = [...]string{"2xx", "3xx", "4xx", "5xx"}
)

// durationBuckets span a cached answer (1 ms) to the query timeout (10 s).
var durationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// Field outcome labels.
const (
	fieldOK    = "ok"
	fieldError = "error"
)

// otherField is the label of a root field the schema does not have (it cannot execute; kept for safety).
const otherField = "other"

type metrics struct {
	registry *prometheus.Registry
	requests [len(metricRoutes)][len(metricClasses)]prometheus.Observer
	// fields holds the ok and error observers of every root field name the schema has.
	fields map[string]*[2]prometheus.Observer
	// executions counts GraphQL operations executed by a compiled plan and by gqlgen's executor.
	executions [2]prometheus.Counter
}

func newMetrics(schema *ast.Schema, st *store.Store) *metrics {
	m := &metrics{registry: prometheus.NewRegistry(), fields: map[string]*[2]prometheus.Observer{}}
	requests := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "recordsd_http_request_duration_seconds",
		Help:    "Time to answer an HTTP request, by route (/graphql, /bills, /healthz, /debug/runtime, other) and status class.",
		Buckets: durationBuckets,
	}, []string{"route", "code"})
	fields := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "recordsd_graphql_field_duration_seconds",
		Help:    "Time to resolve one root field of a GraphQL operation (its resolver and everything below it), by field and outcome (ok, error).",
		Buckets: durationBuckets,
	}, []string{"field", "outcome"})
	executions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "recordsd_graphql_executions_total",
		Help: "GraphQL operations executed, by executor: compiled (a cached read plan, docs/design.md D51) or reference (gqlgen's executor).",
	}, []string{"executor"})
	m.executions[executorCompiled] = executions.WithLabelValues("compiled")
	m.executions[executorReference] = executions.WithLabelValues("reference")
	for i, route := range metricRoutes {
		for j, class := range metricClasses {
			m.requests[i][j] = requests.WithLabelValues(route, class)
		}
	}
	names := []string{"__typename", "__schema", "__type", otherField}
	for _, root := range []*ast.Definition{schema.Query, schema.Mutation, schema.Subscription} {
		if root == nil {
			continue
		}
		for _, f := range root.Fields {
			names = append(names, f.Name)
		}
	}
	for _, name := range names {
		m.fields[name] = &[2]prometheus.Observer{fields.WithLabelValues(name, fieldOK), fields.WithLabelValues(name, fieldError)}
	}
	m.registry.MustRegister(requests, fields, executions, newStoreCollector(st),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// MetricsHandler serves the Prometheus text exposition of recordsd's metrics. recordsd serves it on its own
// listener (recordsd serve --metrics-listen), never on the API's: nothing the gateway forwards can reach it.
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{})
}

// measured times every request by route and status class.
func (s *Server) measured(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		class := sw.status/100 - 2
		if sw.status == 0 {
			class = 0 // nothing written: net/http answers 200
		}
		if class < 0 || class >= len(metricClasses) {
			class = len(metricClasses) - 1
		}
		s.metrics.requests[routeIndex(r.URL.Path)][class].Observe(time.Since(start).Seconds())
	})
}

func routeIndex(path string) int {
	switch path {
	case "/graphql":
		return 0
	case "/bills":
		return 1
	case "/healthz":
		return 2
	case "/debug/runtime":
		return 3
	}
	return 4
}

// metricsExtension is the gqlgen extension timing each root field.
type metricsExtension struct{ m *metrics }

var (
	_ graphql.HandlerExtension     = metricsExtension{}
	_ graphql.RootFieldInterceptor = metricsExtension{}
)

func (metricsExtension) ExtensionName() string                   { return "CivicgateMetrics" }
func (metricsExtension) Validate(graphql.ExecutableSchema) error { return nil }

// InterceptRootField implements graphql.RootFieldInterceptor.
func (e metricsExtension) InterceptRootField(ctx context.Context, next graphql.RootResolver) graphql.Marshaler {
	rc := graphql.GetRootFieldContext(ctx)
	if rc == nil {
		return next(ctx)
	}
	start := time.Now()
	out := next(ctx)
	obs, ok := e.m.fields[rc.Field.Name]
	if !ok {
		obs = e.m.fields[otherField]
	}
	outcome := 0
	if fieldErrors(ctx, rc.Field.Alias) > 0 {
		outcome = 1
	}
	obs[outcome].Observe(time.Since(start).Seconds())
	return out
}
