// Package gqlguard is the Caddy HTTP handler graphql_guard: it checks GraphQL
// requests against a schema at the edge (docs/design.md D12, D13; docs/api.md
// "POST /v1/graphql", "Errors") and forwards the original body untouched when they pass. It is generic:
// the schema comes from a file and the families from configuration.
package gqlguard

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/vektah/gqlparser/v2/ast"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/internal/redisconn"
	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/gqlguard/analysis"
	"github.com/civicgate/civicgate/modules/gqlguard/document"
	"github.com/civicgate/civicgate/modules/gqlguard/persisted"
	"github.com/civicgate/civicgate/modules/gqlguard/subscribe"
	"github.com/civicgate/civicgate/modules/gqlguard/view"
)

func init() {
	caddy.RegisterModule(Guard{})
}

// Defaults (docs/design.md D12).
const (
	DefaultMaxBody         = 128 << 10
	DefaultMaxDepth        = 10
	DefaultMaxAliases      = 30
	DefaultMaxRootFields   = 10
	DefaultMaxTokens       = 5000
	DefaultMaxDirectives   = 50
	DefaultMaxCost         = 10000
	DefaultListSize        = 25
	DefaultLimitArgument   = "limit"
	DefaultEntitlements    = "{" + contract.CivicFamilies + "}"
	DefaultCacheSize       = 4096
	introspectionByDefault = true
	// DefaultIntrospectionMaxDepth is the depth limit of an introspection
	// the guard answers from a view (docs/design.md D75): graphql-js's
	// IntrospectionQuery is 13 deep, its ofType chain one object wide.
	DefaultIntrospectionMaxDepth = 15
)

// Guard is the graphql_guard HTTP handler. Zero limits take the defaults.
type Guard struct {
	// Schema is the path of the GraphQL SDL file (required).
	Schema string `json:"schema,omitempty"`
	// MaxBody is the largest accepted request body in bytes (default 128 KiB).
	MaxBody int64 `json:"max_body,omitempty"`
	// MaxDepth, MaxAliases, MaxRootFields, MaxTokens, MaxDirectives and
	// MaxCost are the document limits of docs/design.md D12.
	MaxDepth      int64 `json:"max_depth,omitempty"`
	MaxAliases    int64 `json:"max_aliases,omitempty"`
	MaxRootFields int64 `json:"max_root_fields,omitempty"`
	MaxTokens     int   `json:"max_tokens,omitempty"`
	MaxDirectives int64 `json:"max_directives,omitempty"`
	MaxCost       int64 `json:"max_cost,omitempty"`
	// DefaultListSize is a list field's size when no limit argument sizes it.
	DefaultListSize int64 `json:"default_list_size,omitempty"`
	// LimitArgument names the argument (or input-object member) sizing a list.
	LimitArgument string `json:"limit_argument,omitempty"`
	// Introspection allows __schema and __type (default true). When false,
	// validation messages carry no "Did you mean" suggestions either.
	Introspection *bool `json:"introspection,omitempty"`
	// IntrospectionMaxDepth replaces MaxDepth for an introspection the guard
	// answers from the caller's schema view (default 15; docs/design.md D75).
	IntrospectionMaxDepth int64 `json:"introspection_max_depth,omitempty"`
	// MeasureOnly logs and counts limit violations instead of refusing them.
	MeasureOnly bool `json:"measure_only,omitempty"`
	// Entitlements is the placeholder expression for the comma-separated
	// families the caller owns (default "{civic.families}"). When the
	// expression is a single placeholder that is not set (no civic_auth in
	// front), or no families are configured, nothing is checked; a
	// placeholder set to the empty string owns no family and every
	// family-bound root field is refused.
	Entitlements string `json:"entitlements,omitempty"`
	// Families maps a family name to the root fields it owns: `Type.field`
	// (e.g. Mutation.borrowBook) or a bare name found in exactly one root type.
	Families map[string][]string `json:"families,omitempty"`
	// Operations lists the operation types that pass: query, mutation,
	// subscription (default: all three).
	Operations []string `json:"operations,omitempty"`
	// Methods lists the HTTP methods accepted for operations: POST, and GET
	// for queries (GraphQL over HTTP; default POST only). A WebSocket
	// upgrade is accepted whenever subscriptions pass.
	Methods []string `json:"methods,omitempty"`
	// Subscriptions bounds graphql-transport-ws WebSockets and graphql-sse
	// streams.
	Subscriptions *SubscriptionsConfig `json:"subscriptions,omitempty"`
	// PersistedQueries enables Apollo's Automatic Persisted Queries.
	PersistedQueries *PersistedQueriesConfig `json:"persisted_queries,omitempty"`
	// TrustedDocuments is the path of a trusted-documents manifest (Apollo's
	// persisted query manifest, or a map of id to document).
	TrustedDocuments string `json:"trusted_documents,omitempty"`
	// TrustedOnly lists the tiers ({civic.tier}) that may send only trusted
	// documents; ["*"]: every caller of this route.
	TrustedOnly []string `json:"trusted_only,omitempty"`
	// CacheSize is the number of validated documents kept (default 4096;
	// a negative value disables the cache).
	CacheSize int `json:"cache_size,omitempty"`
	// SchemaView is the schema a caller's document is validated against:
	// "full" (default) the whole schema, "entitled" the part its tier's
	// families reach (docs/design.md D67).
	SchemaView string `json:"schema_view,omitempty"`
	// Deprecations dates and documents the coordinates the schema marks
	// @deprecated, for the Deprecation, Sunset and Link headers of the
	// responses to the operations that use them (docs/design.md D69).
	Deprecations map[string]DeprecationConfig `json:"deprecations,omitempty"`

	schema      *document.Schema
	compiler    *document.Compiler
	cache       *document.Cache
	views       *view.Views // nil: schema_view full
	fieldFamily analysis.Families
	allowedOps  uint8 // opBit of each operation type that passes
	// entitlements is Entitlements read once (caddyopt.Template): when it is
	// exactly one placeholder, "unset" and "set to empty" can be told apart.
	entitlements        caddyopt.Template
	allowGET, allowPOST bool
	allowHeader         string // the Allow header of a 405
	methodMessage       string
	apq                 persisted.Store     // nil: APQ off
	releaseRedis        func()              // the APQ store's Redis client
	manifest            *persisted.Manifest // nil: no trusted documents
	subs                *subscribe.Shell    // WebSockets and event streams
	metrics             *guardMetrics
	logger              *zap.Logger
	parses              *atomic.Int64 // documents parsed (tests: a cache hit parses nothing)
}

// SubscriptionsConfig bounds long-lived exchanges (docs/design.md D22): the
// subscription shell's configuration (package subscribe).
type SubscriptionsConfig = subscribe.Config

// PersistedQueriesConfig configures Automatic Persisted Queries.
type PersistedQueriesConfig struct {
	// The Redis connection ("redis": a URL, usually {env.REDIS_URL}; addrs,
	// mode, master_name, username, password, tls … beside it; standalone,
	// Sentinel or Cluster, docs/redis.md): documents are then shared by
	// every gateway instance. None: memory only.
	redisconn.Config
	// KeyPrefix prefixes the Redis keys (default "civicgate:").
	KeyPrefix string `json:"key_prefix,omitempty"`
	// TTL is how long a registered document lives in Redis (default 24h).
	TTL caddy.Duration `json:"ttl,omitempty"`
	// MaxEntries and MaxBytes bound the in-memory documents (default 10000
	// and 16 MiB).
	MaxEntries int   `json:"max_entries,omitempty"`
	MaxBytes   int64 `json:"max_bytes,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (Guard) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.graphql_guard",
		New: func() caddy.Module { return new(Guard) },
	}
}

// Provision loads and validates the schema (a caddy reload reruns it, so a
// changed file is picked up) and prepares the cache and metrics.
func (g *Guard) Provision(ctx caddy.Context) error {
	g.logger = ctx.Logger()
	g.setDefaults()
	if g.Schema == "" {
		return errors.New("graphql_guard: schema file is required")
	}
	s, err := document.LoadSchema(g.Schema)
	if err != nil {
		return fmt.Errorf("graphql_guard: %w", err)
	}
	g.schema = s
	if g.fieldFamily, err = analysis.NewFamilies(s.AST, g.Families); err != nil {
		return fmt.Errorf("graphql_guard: %w (schema %s)", err, g.Schema)
	}
	for _, w := range g.Operations {
		g.allowedOps |= opBit(ast.Operation(w))
	}
	if len(g.Operations) == 0 {
		g.allowedOps = opBit(ast.Query) | opBit(ast.Mutation) | opBit(ast.Subscription)
	}
	g.provisionMethods()
	if err := g.provisionPersisted(ctx); err != nil {
		return fmt.Errorf("graphql_guard: %w", err)
	}
	g.parses = new(atomic.Int64)
	deprecation, err := g.provisionDeprecations(time.Now())
	if err != nil {
		return fmt.Errorf("graphql_guard: %w (schema %s)", err, g.Schema)
	}
	g.metrics, err = newGuardMetrics(ctx.GetMetricsRegistry())
	if err != nil {
		return fmt.Errorf("graphql_guard: metrics: %w", err)
	}
	cfg := document.Config{
		Schema:               s,
		Introspection:        *g.Introspection,
		MaxTokens:            g.MaxTokens,
		MeasureOnly:          g.MeasureOnly,
		LimitArgument:        g.LimitArgument,
		DefaultListSize:      g.DefaultListSize,
		Families:             g.fieldFamily,
		OnParse:              func() { g.parses.Add(1) },
		Deprecation:          deprecation,
		OnCoordinatesDropped: func(n int) { g.metrics.coordinatesDropped.Add(float64(n)) },
	}
	if g.manifest != nil {
		cfg.Trusted = g.manifest.Contains
	}
	g.compiler = document.NewCompiler(cfg)
	if g.SchemaView == SchemaViewEntitled {
		if g.views, err = g.provisionViews(cfg); err != nil {
			return fmt.Errorf("graphql_guard: %w", err)
		}
	}
	g.cache = document.NewCache(g.CacheSize)
	if g.subs, err = subscribe.New(ctx, g.Subscriptions, g, g.MaxBody); err != nil {
		return fmt.Errorf("graphql_guard: %w", err)
	}
	return nil
}

func (g *Guard) setDefaults() {
	setDefault(&g.MaxBody, DefaultMaxBody)
	setDefault(&g.MaxDepth, DefaultMaxDepth)
	setDefault(&g.MaxAliases, DefaultMaxAliases)
	setDefault(&g.MaxRootFields, DefaultMaxRootFields)
	setDefault(&g.MaxTokens, DefaultMaxTokens)
	setDefault(&g.MaxDirectives, DefaultMaxDirectives)
	setDefault(&g.MaxCost, DefaultMaxCost)
	setDefault(&g.IntrospectionMaxDepth, DefaultIntrospectionMaxDepth)
	setDefault(&g.DefaultListSize, DefaultListSize)
	setDefault(&g.LimitArgument, DefaultLimitArgument)
	setDefault(&g.Entitlements, DefaultEntitlements)
	g.entitlements = caddyopt.ParseTemplate(g.Entitlements)
	setDefault(&g.CacheSize, DefaultCacheSize)
	if g.Introspection == nil {
		v := introspectionByDefault
		g.Introspection = &v
	}
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// Validate refuses limits that cannot work.
func (g *Guard) Validate() error {
	for name, v := range map[string]int64{
		"max_body": g.MaxBody, "max_depth": g.MaxDepth, "max_aliases": g.MaxAliases,
		"max_root_fields": g.MaxRootFields, "max_tokens": int64(g.MaxTokens),
		"max_directives": g.MaxDirectives, "max_cost": g.MaxCost, "default_list_size": g.DefaultListSize,
		"introspection_max_depth": g.IntrospectionMaxDepth,
	} {
		if v < 0 {
			return fmt.Errorf("graphql_guard: %s must not be negative", name)
		}
	}
	if _, err := parseOperations(g.Operations); err != nil {
		return fmt.Errorf("graphql_guard: operations: %w", err)
	}
	if err := checkMethods(g.Methods); err != nil {
		return fmt.Errorf("graphql_guard: methods: %w", err)
	}
	if err := checkSchemaView(g.SchemaView, len(g.Families)); err != nil {
		return fmt.Errorf("graphql_guard: schema_view: %w", err)
	}
	for name, fields := range g.Families {
		if name == "" || strings.Contains(name, ",") {
			return fmt.Errorf("graphql_guard: invalid family name %q", name)
		}
		if len(fields) == 0 {
			return fmt.Errorf("graphql_guard: family %s has no root fields", name)
		}
	}
	return nil
}

// Cleanup releases the APQ store's Redis client and the subscription slots'
// store, and closes the terminated subscription sockets.
func (g *Guard) Cleanup() error {
	g.subs.Close()
	if g.releaseRedis != nil {
		g.releaseRedis()
	}
	return nil
}

// provisionMethods settles the accepted methods and the 405 that names them.
func (g *Guard) provisionMethods() {
	methods := g.Methods
	if len(methods) == 0 {
		methods = []string{http.MethodPost}
	}
	for _, m := range methods {
		g.allowGET = g.allowGET || m == http.MethodGet
		g.allowPOST = g.allowPOST || m == http.MethodPost
	}
	g.allowHeader = strings.Join(methods, ", ")
	g.methodMessage = msgMethodNotAllowed
	if g.allowGET {
		g.methodMessage = "Method not allowed: use " + strings.Join(methods, " or ")
	}
}

// Interface guards
var (
	_ caddy.CleanerUpper          = (*Guard)(nil)
	_ caddy.Provisioner           = (*Guard)(nil)
	_ caddy.Validator             = (*Guard)(nil)
	_ caddyhttp.MiddlewareHandler = (*Guard)(nil)
)
