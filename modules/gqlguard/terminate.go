package gqlguard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.opentelemetry.io/otel/trace"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/gqlguard/subscribe"
	"github.com/civicgate/civicgate/modules/gqlguard/subscribe/subhub"
	"github.com/civicgate/civicgate/modules/gqlguard/subscribe/wsproxy"
)

// Terminated subscriptions (docs/design.md D54): with subscriptions {
// upstream … }, graphql_guard answers the WebSocket itself (wsproxy.Terminate)
// and multiplexes the admitted subscriptions onto a few upstream sockets
// (subhub), sharing identical ones within a dedup scope.

// Dedup scopes (subscriptions { dedup … }).
const (
	dedupOff      = "off"
	dedupFamilies = "families"
	dedupOrg      = "org"
	dedupKey      = "key"
)

// provisionTermination starts the hub when subscriptions name an upstream.
func (g *Guard) provisionTermination() error {
	c := g.Subscriptions
	if c == nil || c.Upstream == "" {
		return nil
	}
	u, err := url.Parse(c.Upstream)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return fmt.Errorf("subscriptions upstream %q must be a ws:// or wss:// URL", c.Upstream)
	}
	switch c.Dedup {
	case "", dedupOff, dedupFamilies, dedupOrg, dedupKey:
	default:
		return fmt.Errorf("subscriptions dedup %q: want families, org, key or off", c.Dedup)
	}
	g.upstreamHeaders = g.upstreamHeaders[:0]
	for name, value := range c.UpstreamHeaders {
		canon := http.CanonicalHeaderKey(name)
		if canon == "Authorization" || canon == "Cookie" || canon == "Proxy-Authorization" {
			return fmt.Errorf("subscriptions upstream_header %s: the caller's credentials never go upstream", name)
		}
		g.upstreamHeaders = append(g.upstreamHeaders, upstreamHeader{name: canon, value: caddyopt.ParseTemplate(value)})
	}
	slices.SortFunc(g.upstreamHeaders, func(a, b upstreamHeader) int { return strings.Compare(a.name, b.name) })
	g.hub = subhub.New(subhub.Config{URL: c.Upstream, Observer: hubObserver{g.metrics, g.logger}})
	g.sockets = new(wsproxy.Sockets)
	g.watches = subscribe.NewCredentialWatches()
	return nil
}

// upstreamHeader is one subscriptions { upstream_header } line.
type upstreamHeader struct {
	name  string
	value caddyopt.Template
}

// terminateWebSocket answers a graphql-transport-ws upgrade itself.
func (g *Guard) terminateWebSocket(w http.ResponseWriter, r *http.Request, cfg wsproxy.Config, scope *requestScope, repl *caddy.Replacer) error {
	q, _ := contract.RequestFrom(r.Context())
	// The socket outlives the request: its checks run in a context that
	// keeps only the request's span (the request's own context holds
	// net/http's connection state and buffers).
	ctx := trace.ContextWithSpan(context.Background(), trace.SpanFromContext(r.Context()))
	detached := *scope
	detached.ctx = ctx
	cfg.Checker = &subscribeChecker{g: g, scope: detached}
	tc := wsproxy.TerminateConfig{
		Context:     ctx,
		Config:      cfg,
		Upstream:    g.upstreamFor(r, q, scope, repl).tracedBy(ctx),
		Keepalive:   g.keepalive(),
		PongTimeout: time.Duration(g.Subscriptions.PongTimeout),
		MaxLifetime: time.Duration(g.Subscriptions.MaxLifetime),
		SendBuffer:  g.Subscriptions.SendBuffer,
		Observer:    socketObserver{g.metrics},
	}
	if q != nil && q.Watcher() != nil {
		tc.Revocations = g.watches.Of(q.Watcher())
	}
	err := wsproxy.Terminate(w, r, tc, g.sockets)
	var he *wsproxy.HandshakeError
	if errors.As(err, &he) {
		writeJSON(w, he.Status, messageBody(he.Message))
		g.metrics.requests.WithLabelValues(outcomeBadRequest).Inc()
		return nil
	}
	if err != nil {
		return fmt.Errorf("graphql_guard: %w", err)
	}
	g.metrics.allowed.Inc()
	return nil
}

// upstreamFor binds the hub to the caller: the identity scope (which
// upstream socket), the dedup scope (with whom a subscription is shared)
// and the upstream handshake's headers.
func (g *Guard) upstreamFor(r *http.Request, q *contract.Request, scope *requestScope, repl *caddy.Replacer) hubSession {
	var caller *contract.Caller
	if q != nil {
		caller, _ = q.Caller()
	}
	keyID, org, families := scope.keyID, "", ""
	if caller != nil {
		keyID, org = caller.KeyID, caller.Org
		fams := slices.Clone(caller.Families)
		slices.Sort(fams)
		families = strings.Join(fams, ",")
	}
	s := subhub.Scope{Identity: "key:" + keyID}
	switch g.Subscriptions.Dedup {
	case dedupFamilies:
		s.Dedup = "families:" + families
	case dedupOrg:
		s.Dedup = "org:" + org
	case dedupKey:
		s.Dedup = "key:" + keyID
	}
	if s.Dedup != "" {
		s.Identity = s.Dedup
	}
	// The handshake's headers, read now (the request's replacer does not
	// outlive it) except the identity assertion, signed fresh per dial.
	fixed := make(http.Header, len(g.upstreamHeaders))
	identity := false
	for _, h := range g.upstreamHeaders {
		if h.name == contract.IdentityHeader && q != nil && q.IdentitySource() != nil {
			identity = true
			continue
		}
		v := h.value.Expand(repl)
		if v == "" || (scope.token != "" && strings.Contains(v, scope.token)) {
			continue // never the bearer token
		}
		fixed.Set(h.name, v)
	}
	var source contract.IdentitySource
	if identity {
		source = q.IdentitySource()
	}
	s.Header = func() (http.Header, error) {
		h := fixed.Clone()
		if source != nil {
			tok, err := source.FreshIdentity(time.Now())
			if err != nil {
				return nil, fmt.Errorf("signing the upstream's identity assertion: %w", err)
			}
			h.Set(contract.IdentityHeader, tok)
		}
		return h, nil
	}
	return hubSession{hub: g.hub, scope: s}
}

// tracedBy makes ctx's span (a span-only context) the parent of the spans of
// an upstream connection this caller opens.
func (h hubSession) tracedBy(ctx context.Context) hubSession {
	h.scope.Trace = ctx
	return h
}

// hubSession is wsproxy.Upstream for one socket's caller.
type hubSession struct {
	hub   *subhub.Hub
	scope subhub.Scope
}

func (h hubSession) Subscribe(payload []byte, sink subhub.Sink) (func(), error) {
	stop, err := h.hub.Subscribe(h.scope, payload, sink)
	if err != nil {
		return nil, fmt.Errorf("graphql_guard: %w", err)
	}
	return stop, nil
}

// cleanupTermination closes the terminated sockets (1001) and the
// upstream sockets.
func (g *Guard) cleanupTermination() {
	if g.sockets != nil {
		g.sockets.CloseAll()
	}
	if g.hub != nil {
		g.hub.Close()
	}
}
