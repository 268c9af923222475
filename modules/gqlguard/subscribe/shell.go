package subscribe

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/gqlguard/document"
	"github.com/civicgate/civicgate/modules/gqlguard/subscribe/subhub"
	"github.com/civicgate/civicgate/modules/gqlguard/subscribe/wsproxy"
)

// Subscriptions (docs/design.md D22): a graphql-transport-ws WebSocket is
// checked message by message — every subscribe goes through the guard's
// pipeline exactly like a POST, is charged to the key's rate limit, counted
// against the bounds and, last, spends its cost on the key's cost budget —
// and a graphql-sse event stream is checked like the POST it is. Both end
// when the caller's credential stops being valid.

const (
	defaultMaxPerConnection = 100
	defaultMaxPerKey        = 1000
	defaultInitTimeout      = 10 * time.Second
	msgSubprotocol          = "WebSocket subprotocol must be graphql-transport-ws"
	msgTooManySubscriptions = "Too many subscriptions for this API key"
	// CodeSubscriptionLimit is the extensions.code of a subscription over
	// max_per_key.
	CodeSubscriptionLimit = "SUBSCRIPTION_LIMIT"
)

// Request outcomes the shell counts (the guard's "outcome" label).
const (
	outcomeBadRequest      = "bad_request"
	outcomeSubscriptionCap = "subscription_limit"
)

// Pipeline is what the shell needs of graphql_guard (docs/design.md D61):
// the request pipeline for a socket's subscribe messages, and the request
// metric. The guard implements it; its socket checker also hands each
// admitted subscribe to the rate limiter's usage per operation (D76).
type Pipeline interface {
	// OpenSocket reads the caller of a WebSocket upgrade once: the checker
	// of its subscribe messages (the POST pipeline on the same decoded
	// request type, then the cost charge on the caller's budget), and the
	// caller's bearer token and key id.
	OpenSocket(r *http.Request, repl *caddy.Replacer) Socket
	// Refused counts a request refused with outcome; Allowed counts one
	// admitted.
	Refused(outcome string)
	Allowed()
}

// Socket is a WebSocket's caller as the pipeline read it.
type Socket struct {
	Checker wsproxy.Checker
	Token   string // the caller's bearer token: never sent upstream
	KeyID   string // whose max_per_key slots the subscriptions take; "": none
}

// EventStream is a graphql-sse request the pipeline admitted.
type EventStream struct {
	Subscription bool   // a subscription (not a query or mutation sent as a stream)
	KeyID        string // whose max_per_key slots it takes; "": none
	Body         []byte // what goes on: the checked body, or the subscribe payload of a GET
	// Charge spends the operation's cost on budget; refused, it has written
	// the refusal to w and returns the outcome.
	Charge func(ctx context.Context, w http.ResponseWriter, budget contract.CostBudget) (outcome string)
}

// Next is the handler after the guard (caddyhttp.Handler).
type Next interface {
	ServeHTTP(http.ResponseWriter, *http.Request) error
}

// Shell serves graphql_guard's WebSockets and event streams.
type Shell struct {
	cfg      *Config // nil: every default
	pipeline Pipeline
	maxBody  int64
	logger   *zap.Logger
	metrics  *Metrics
	slots    *keySlots          // subscriptions per key
	hub      *subhub.Hub        // nil: subscriptions are tunnelled through next
	sockets  *wsproxy.Sockets   // the terminated sockets
	watches  *CredentialWatches // shared per credential
	headers  []upstreamHeader   // subscriptions { upstream_header }
}

// New provisions the shell: the per-key slots (shared through Redis when
// cfg names one), the metrics in ctx's registry, and the hub when cfg names
// an upstream. maxBody bounds a WebSocket message.
func New(ctx caddy.Context, cfg *Config, p Pipeline, maxBody int64) (*Shell, error) {
	s := &Shell{cfg: cfg, pipeline: p, maxBody: maxBody, logger: ctx.Logger()}
	if err := s.provisionSlots(ctx); err != nil {
		return nil, err
	}
	m, err := NewMetrics(ctx.GetMetricsRegistry())
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("metrics: %w", err)
	}
	s.metrics = m
	if err := s.provisionTermination(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// IsUpgrade tells whether r asks for a WebSocket (the shell's, when
// subscriptions pass).
func IsUpgrade(r *http.Request) bool { return wsproxy.IsUpgrade(r) }

// Terminates tells whether the shell answers subscriptions itself
// (subscriptions { upstream … }).
func (s *Shell) Terminates() bool { return s != nil && s.hub != nil }

// Close gives the shared slots back and closes the terminated sockets
// (1001) and the upstream sockets (the guard's Cleanup).
func (s *Shell) Close() {
	if s == nil {
		return
	}
	s.slots.close()
	s.cleanupTermination()
}

// KeySlots is key's max_per_key slots, as a WebSocket or event stream of
// the key takes them.
func (s *Shell) KeySlots(key string) wsproxy.Slots { return s.slots.forKey(key) }

// SlotsHeld is the number of key's slots held on this instance.
func (s *Shell) SlotsHeld(key string) int {
	s.slots.mu.Lock()
	defer s.slots.mu.Unlock()
	return s.slots.open[key]
}

func (s *Shell) maxPerKey() int {
	if s.cfg != nil && s.cfg.MaxPerKey > 0 {
		return s.cfg.MaxPerKey
	}
	return defaultMaxPerKey
}

func (s *Shell) maxPerConnection() int {
	if s.cfg != nil && s.cfg.MaxPerConnection > 0 {
		return s.cfg.MaxPerConnection
	}
	return defaultMaxPerConnection
}

func (s *Shell) initTimeout() time.Duration {
	if s.cfg != nil && s.cfg.InitTimeout > 0 {
		return time.Duration(s.cfg.InitTimeout)
	}
	return defaultInitTimeout
}

// bodyWriter writes the shell's JSON bodies as the guard does: with
// Content-Length.
var bodyWriter = contract.JSONWriter{ContentLength: true}

// ServeWebSocket admits a graphql-transport-ws upgrade and hands next a
// connection whose client messages are checked. (Where subscriptions do not
// pass, the guard checks the upgrade like any GET instead.)
func (s *Shell) ServeWebSocket(w http.ResponseWriter, r *http.Request, next Next) error {
	if !wsproxy.Offers(r) {
		bodyWriter.Write(w, http.StatusBadRequest, contract.MessageBody(msgSubprotocol))
		s.pipeline.Refused(outcomeBadRequest)
		return nil
	}
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	sock := s.pipeline.OpenSocket(r, repl)
	cfg := wsproxy.Config{
		Checker:          sock.Checker,
		InitTimeout:      s.initTimeout(),
		MaxMessage:       s.maxBody,
		MaxSubscriptions: s.maxPerConnection(),
		Token:            sock.Token,
		Logger:           s.logger,
		Refused:          s.pipeline.Refused,
	}
	if sock.KeyID != "" {
		cfg.Slots = s.slots.forKey(sock.KeyID)
	}
	if s.hub != nil {
		return s.terminateWebSocket(w, r, cfg, sock, repl)
	}
	if q, ok := contract.RequestFrom(r.Context()); ok {
		cfg.Charger = q.Charger()
		if wt := q.Watcher(); wt != nil {
			cfg.Watch = wt.WatchCredential()
			defer cfg.Watch.Stop() // the upgrade may fail before the filter owns it
		}
	}
	s.pipeline.Allowed()
	return next.ServeHTTP(wsproxy.WrapResponseWriter(w, r, cfg), r)
}

// ServeEventStream forwards an admitted graphql-sse request, bounded per
// key, charged to the key's cost budget and cut when the caller's
// credential stops being valid.
func (s *Shell) ServeEventStream(w http.ResponseWriter, r *http.Request, next Next, st EventStream) error {
	if st.Subscription && st.KeyID != "" {
		slot := s.slots.forKey(st.KeyID)
		if !slot.Acquire() {
			bodyWriter.Write(w, http.StatusOK, document.ErrorBody([]document.Error{{Message: msgTooManySubscriptions, Code: CodeSubscriptionLimit}}))
			s.pipeline.Refused(outcomeSubscriptionCap)
			return nil
		}
		defer slot.Release()
	}
	q, _ := contract.RequestFrom(r.Context())
	if q != nil && q.CostBudget() != nil {
		if outcome := st.Charge(r.Context(), w, q.CostBudget()); outcome != "" {
			s.pipeline.Refused(outcome)
			return nil
		}
	}
	s.pipeline.Allowed()
	if s.hub != nil && st.Subscription && (r.Method == http.MethodPost || r.Method == http.MethodGet) {
		return s.terminateEventStream(w, r, q, st)
	}
	if q == nil || q.Watcher() == nil {
		return next.ServeHTTP(w, r)
	}
	wt := q.Watcher()
	watch := wt.WatchCredential()
	defer watch.Stop()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-watch.Done():
			if reason := watch.Reason(); reason != "" {
				s.logger.Info("event stream ended: credential no longer valid", zap.String("reason", reason))
				cancel()
			}
		case <-ctx.Done():
		}
	}()
	return next.ServeHTTP(w, r.WithContext(ctx))
}
