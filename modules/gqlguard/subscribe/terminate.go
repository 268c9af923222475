package subscribe

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
	"github.com/civicgate/civicgate/modules/gqlguard/subscribe/subhub"
	"github.com/civicgate/civicgate/modules/gqlguard/subscribe/wsproxy"
)

// Terminated subscriptions (docs/design.md D54): with subscriptions {
// upstream … }, graphql_guard answers the WebSocket itself (wsproxy.Terminate)
// and multiplexes the admitted subscriptions onto a few upstream sockets
// (subhub), sharing identical ones within a dedup scope.

// Dedup scopes (subscriptions { dedup … }).
const (
	DedupOff      = "off"
	DedupFamilies = "families"
	DedupOrg      = "org"
	DedupKey      = "key"
)

// provisionTermination starts the hub when subscriptions name an upstream.
func (s *Shell) provisionTermination() error {
	c := s.cfg
	if c == nil || c.Upstream == "" {
		return nil
	}
	u, err := url.Parse(c.Upstream)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return fmt.Errorf("subscriptions upstream %q must be a ws:// or wss:// URL", c.Upstream)
	}
	switch c.Dedup {
	case "", DedupOff, DedupFamilies, DedupOrg, DedupKey:
	default:
		return fmt.Errorf("subscriptions dedup %q: want families, org, key or off", c.Dedup)
	}
	s.headers = s.headers[:0]
	for name, value := range c.UpstreamHeaders {
		canon := http.CanonicalHeaderKey(name)
		if canon == "Authorization" || canon == "Cookie" || canon == "Proxy-Authorization" {
			return fmt.Errorf("subscriptions upstream_header %s: the caller's credentials never go upstream", name)
		}
		s.headers = append(s.headers, upstreamHeader{name: canon, value: caddyopt.ParseTemplate(value)})
	}
	slices.SortFunc(s.headers, func(a, b upstreamHeader) int { return strings.Compare(a.name, b.name) })
	s.hub = subhub.New(subhub.Config{URL: c.Upstream, Observer: hubObserver{s.metrics, s.logger}})
	s.sockets = new(wsproxy.Sockets)
	s.watches = NewCredentialWatches()
	return nil
}

// upstreamHeader is one subscriptions { upstream_header } line.
type upstreamHeader struct {
	name  string
	value caddyopt.Template
}

// terminateWebSocket answers a graphql-transport-ws upgrade itself.
func (s *Shell) terminateWebSocket(w http.ResponseWriter, r *http.Request, cfg wsproxy.Config, sock Socket, repl *caddy.Replacer) error {
	q, _ := contract.RequestFrom(r.Context())
	// The socket outlives the request: its checks run in a context that
	// keeps only the request's span (the request's own context holds
	// net/http's connection state and buffers; the socket's checker holds
	// none, Pipeline.OpenSocket).
	ctx := trace.ContextWithSpan(context.Background(), trace.SpanFromContext(r.Context()))
	tc := wsproxy.TerminateConfig{
		Context:     ctx,
		Config:      cfg,
		Upstream:    s.upstreamFor(q, sock.KeyID, sock.Token, repl).tracedBy(ctx),
		Keepalive:   s.keepalive(),
		PongTimeout: time.Duration(s.cfg.PongTimeout),
		MaxLifetime: time.Duration(s.cfg.MaxLifetime),
		SendBuffer:  s.cfg.SendBuffer,
		Observer:    socketObserver{s.metrics},
	}
	if q != nil && q.Watcher() != nil {
		tc.Revocations = s.watches.Of(q.Watcher())
	}
	err := wsproxy.Terminate(w, r, tc, s.sockets)
	var he *wsproxy.HandshakeError
	if errors.As(err, &he) {
		bodyWriter.Write(w, he.Status, contract.MessageBody(he.Message))
		s.pipeline.Refused(outcomeBadRequest)
		return nil
	}
	if err != nil {
		return fmt.Errorf("graphql_guard: %w", err)
	}
	s.pipeline.Allowed()
	return nil
}

// upstreamFor binds the hub to the caller: the identity scope (which
// upstream socket), the dedup scope (with whom a subscription is shared)
// and the upstream handshake's headers.
func (s *Shell) upstreamFor(q *contract.Request, keyID, token string, repl *caddy.Replacer) hubSession {
	var caller *contract.Caller
	if q != nil {
		caller, _ = q.Caller()
	}
	org, families := "", ""
	if caller != nil {
		keyID, org = caller.KeyID, caller.Org
		fams := slices.Clone(caller.Families)
		slices.Sort(fams)
		families = strings.Join(fams, ",")
	}
	sc := subhub.Scope{Identity: "key:" + keyID}
	switch s.cfg.Dedup {
	case DedupFamilies:
		sc.Dedup = "families:" + families
	case DedupOrg:
		sc.Dedup = "org:" + org
	case DedupKey:
		sc.Dedup = "key:" + keyID
	}
	if sc.Dedup != "" {
		sc.Identity = sc.Dedup
	}
	// The handshake's headers, read now (the request's replacer does not
	// outlive it) except the identity assertion, signed fresh per dial.
	fixed := make(http.Header, len(s.headers))
	identity := false
	for _, h := range s.headers {
		if h.name == contract.IdentityHeader && q != nil && q.IdentitySource() != nil {
			identity = true
			continue
		}
		v := h.value.Expand(repl)
		if v == "" || (token != "" && strings.Contains(v, token)) {
			continue // never the bearer token
		}
		fixed.Set(h.name, v)
	}
	var source contract.IdentitySource
	if identity {
		source = q.IdentitySource()
	}
	sc.Header = func() (http.Header, error) {
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
	return hubSession{hub: s.hub, scope: sc}
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
func (s *Shell) cleanupTermination() {
	if s.sockets != nil {
		s.sockets.CloseAll()
	}
	if s.hub != nil {
		s.hub.Close()
	}
}
