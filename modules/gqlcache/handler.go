package gqlcache

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/modules/contract"
)

// PlaceholderCache is the placeholder the handler sets on every request it
// sees: hit, miss, bypass or stale-refused (for the access log).
const PlaceholderCache = "graphql.cache"

// Handler is the graphql_cache HTTP handler: it answers repeated queries
// from the store of the graphql_cache app.
type Handler struct {
	// Placeholders whose values go into every key, so that callers who may
	// see different data never share an entry (default {civic.families};
	// "private" is {civic.families} {civic.org}).
	Scope []string `json:"scope,omitempty"`
	// Freshness of a stored response (default 60s), capped by the
	// upstream's Cache-Control s-maxage or max-age.
	TTL caddy.Duration `json:"ttl,omitempty"`
	// Static tags of every entry (default: the families in {graphql.families}).
	Tags []string `json:"tags,omitempty"`
	// Off turns the handler into a pass-through (an operator's switch, e.g.
	// `enabled {$CIVICGATE_CACHE:on}`): nothing is looked up or stored and
	// {graphql.cache} is "off".
	Off bool `json:"off,omitempty"`

	inst     *instance
	scope    []caddyopt.Template
	ttl      time.Duration
	maxEntry int64
	now      func() time.Time
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.graphql_cache", New: func() caddy.Module { return new(Handler) }}
}

// Provision fills the defaults and finds the app's store.
func (h *Handler) Provision(ctx caddy.Context) error {
	scope := h.Scope
	if len(scope) == 0 {
		scope = []string{"{" + contract.CivicFamilies + "}"}
	}
	h.scope = h.scope[:0]
	for _, s := range scope {
		if s == "private" {
			h.scope = append(h.scope, caddyopt.ParseTemplate("{"+contract.CivicFamilies+"}"), caddyopt.ParseTemplate("{"+contract.CivicOrg+"}"))
			continue
		}
		h.scope = append(h.scope, caddyopt.ParseTemplate(s))
	}
	h.ttl = time.Duration(h.TTL)
	if h.ttl == 0 {
		h.ttl = 60 * time.Second
	}
	if h.ttl < 0 {
		return fmt.Errorf("graphql_cache: ttl %s must be positive", h.ttl)
	}
	for _, t := range h.Tags {
		if t == "" || strings.ContainsAny(t, ", ") {
			return fmt.Errorf("graphql_cache: tag %q must be one word without commas", t)
		}
	}
	app, err := ctx.App("graphql_cache")
	if err != nil {
		return fmt.Errorf("graphql_cache: %w", err)
	}
	h.inst = app.(*App).inst
	h.maxEntry = h.inst.maxEntry
	h.now = time.Now
	return nil
}

func acceptsEventStream(accept []string) bool {
	for _, v := range accept {
		if strings.Contains(v, "text/event-stream") {
			return true
		}
	}
	return false
}

// ServeHTTP answers a cacheable request from the store or forwards it and
// stores the answer (README.md "What is cached").
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if len(r.Header["Upgrade"]) > 0 || acceptsEventStream(r.Header["Accept"]) {
		return next.ServeHTTP(w, r) // a stream is never cached: pass it untouched
	}
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if h.Off {
		if repl != nil {
			repl.Set(PlaceholderCache, "off")
		}
		return next.ServeHTTP(w, r)
	}
	if repl == nil {
		repl = caddy.NewReplacer()
	}
	m := h.inst.store.metrics.Load()
	// The request graphql_guard decoded and admitted (D40): the cache reads
	// its operation typed, never the {graphql.*} placeholders (D61). Not
	// decoded: not a GraphQL request to the cache (the plain GET mode).
	var gql *contract.GraphQLRequest
	if q, ok := contract.RequestFrom(r.Context()); ok {
		gql, _ = q.GraphQL()
	}
	graphql := gql != nil
	var op string
	if graphql {
		op = gql.Operation.Type
	}
	if op == "subscription" {
		return next.ServeHTTP(w, r)
	}
	span := startCacheSpan(r.Context())
	switch {
	case graphql && op != "query":
		return h.bypass(w, r, next, repl, m, op, span)
	case !graphql && r.Method != http.MethodGet && r.Method != http.MethodHead:
		return h.bypass(w, r, next, repl, m, "method", span)
	}
	noCache := false
	if cc := r.Header["Cache-Control"]; len(cc) > 0 {
		rcc := parseCacheControl(cc)
		if rcc.noStore {
			return h.bypass(w, r, next, repl, m, "no-store", span)
		}
		noCache = rcc.noCache || rcc.maxAge == 0
	}
	if !h.inst.listening() {
		m.staleRefused.Inc()
		repl.Set(PlaceholderCache, "stale-refused")
		endCacheSpan(span, "stale-refused", "")
		w.Header()["Cache-Status"] = []string{"civicgate; fwd=miss; detail=invalidation-down"}
		return next.ServeHTTP(w, r)
	}
	tags := tagList{list: h.Tags}
	if h.Tags == nil && graphql {
		tags.list = gql.Operation.Families
	}
	buf := getBuffer()
	defer putBuffer(buf)
	key, startSeq, baseLen, refused := h.key(buf, r, repl, gql, tags)
	if refused != "" {
		return h.bypass(w, r, next, repl, m, refused, span)
	}
	now := h.now()
	if !noCache {
		if e := h.inst.store.get(key, now); e != nil && e.servesRequest(r.Header) {
			m.hits.Inc()
			repl.Set(PlaceholderCache, "hit")
			h.serveEntry(w, r, e, now, "")
			endCacheSpan(span, "hit", "memory")
			return nil
		}
	}
	var sr *sharedReq
	if h.inst.shared != nil {
		var served bool
		if sr, served = h.sharedLookup(w, r, repl, m, key, (*buf)[:baseLen], tags, startSeq, noCache); served {
			endCacheSpan(span, "hit", "shared")
			return nil
		}
	}
	m.misses.Inc()
	repl.Set(PlaceholderCache, "miss")
	endCacheSpan(span, "miss", "")
	c := &capture{w: w, h: h, prefix: "civicgate; fwd=miss", maxEntry: h.maxEntry, graphql: graphql, reqHeader: r.Header}
	if noCache {
		c.prefix = "civicgate; fwd=request"
	}
	if r.Method == http.MethodHead {
		w.Header()["Cache-Status"] = []string{"civicgate; fwd=miss; detail=head"}
		return next.ServeHTTP(w, r)
	}
	if noCache {
		return h.forward(c, r, next, key, tags, startSeq, sr)
	}
	f, leader := h.inst.flights.join(key)
	if !leader {
		if e := f.wait(r.Context()); e != nil && e.servesRequest(r.Header) {
			h.serveEntry(w, r, e, h.now(), "; collapsed")
			return nil
		}
		return h.forward(c, r, next, key, tags, startSeq, sr)
	}
	var stored *entry
	defer func() { h.inst.flights.land(key, f, stored) }()
	var err error
	stored, err = h.forwardEntry(c, r, next, key, tags, startSeq, sr)
	return err
}

// forward sends a miss upstream through c and stores what may be stored.
func (h *Handler) forward(c *capture, r *http.Request, next caddyhttp.Handler, key cacheKey, tags tagList, startSeq uint64, sr *sharedReq) error {
	_, err := h.forwardEntry(c, r, next, key, tags, startSeq, sr)
	return err
}

// forwardEntry is forward, returning the entry stored; with sr, a stored
// entry is shared in Redis too.
func (h *Handler) forwardEntry(c *capture, r *http.Request, next caddyhttp.Handler, key cacheKey, tags tagList, startSeq uint64, sr *sharedReq) (*entry, error) {
	if err := next.ServeHTTP(c, r); err != nil {
		if c.holding { // nothing sent yet: the error handler answers
			c.w.Header().Del("Cache-Status")
		}
		return nil, err
	}
	e := c.finish(key, tags, startSeq, h.now())
	if e != nil && sr != nil {
		h.sharePut(sr, e, tags)
	}
	return e, nil
}

// bypass forwards a request the cache does not handle.
func (h *Handler) bypass(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, repl *caddy.Replacer, m *metrics, detail string,
	span trace.Span) error {
	m.bypasses.Inc()
	repl.Set(PlaceholderCache, "bypass")
	endCacheSpan(span, "bypass", "")
	w.Header()["Cache-Status"] = []string{"civicgate; fwd=bypass; detail=" + detail}
	return next.ServeHTTP(w, r)
}

// detailAliased is why a GraphQL request is bypassed before its key (the
// Cache-Status detail): a parameter name another reader may take for a
// GraphQL one.
const detailAliased = "aliased"

// key computes the request's key: its scope, and for a GraphQL request
// (req: the request graphql_guard decoded, one parser, docs/design.md D40)
// its document, operation name, variables and extensions as sent, else its
// path and query; then the generation of each of its tags. startSeq is the
// store's seq at that moment. (*buf)[:baseLen] is the material without the
// generations (the shared key's). refused is why the request is bypassed
// instead ("" to go on): a GraphQL request with an aliased parameter name.
func (h *Handler) key(buf *[]byte, r *http.Request, repl *caddy.Replacer, req *contract.GraphQLRequest, tags tagList) (key cacheKey, startSeq uint64, baseLen int, refused string) {
	b := *buf
	for _, p := range h.scope {
		b = appendField(b, p.Expand(repl))
	}
	if req != nil {
		if req.Aliased {
			return key, 0, 0, detailAliased
		}
		b = appendField(b, keyMethod(r.Method)) // a GET and a POST are answered apart
		b = appendField(b, req.Operation.DocumentHash)
		b = appendField(b, req.Operation.Name)
		b = appendSentField(b, req.Variables)
		b = appendSentField(b, req.Extensions)
	} else {
		b = appendField(b, keyMethod(r.Method))
		b = appendField(b, r.URL.EscapedPath())
		b = appendField(b, r.URL.RawQuery)
	}
	baseLen = len(b)
	b, startSeq = h.inst.store.generations(b, tags)
	*buf = b
	return sumKey(b), startSeq, baseLen, ""
}

// keyMethod is the method a request is keyed by: a HEAD is answered from
// the GET's entry.
func keyMethod(method string) string {
	if method == http.MethodHead {
		return http.MethodGet
	}
	return method
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
