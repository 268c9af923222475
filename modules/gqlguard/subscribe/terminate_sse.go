package subscribe

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/contract"
)

// terminateEventStream serves an admitted graphql-sse subscription from the
// hub (subscriptions { upstream … }) instead of the next handler: the same
// upstream sockets and dedup groups as the WebSockets. The stream ends with
// the upstream's complete or error, max_lifetime (an error result, then
// complete), the credential's end, the client leaving, or the client being
// too slow for send_buffer events.
func (s *Shell) terminateEventStream(w http.ResponseWriter, r *http.Request, q *contract.Request, st EventStream) error {
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	token, _ := contract.BearerFromRequest(r)
	sink := &sseSink{events: make(chan sseEvent, s.sendBuffer()+1)}
	traceCtx := trace.ContextWithSpan(context.Background(), trace.SpanFromContext(r.Context()))
	stop, err := s.upstreamFor(q, st.KeyID, token, repl).tracedBy(traceCtx).Subscribe(st.Body, sink)
	if err != nil {
		s.logger.Error("starting a terminated event stream failed")
		bodyWriter.Write(w, http.StatusInternalServerError, contract.BodyInternal)
		return nil
	}
	defer stop()
	m := s.metrics
	m.active.Inc()
	defer m.active.Dec()
	var (
		revoked <-chan struct{}
		watch   contract.CredentialWatch
	)
	if q != nil && q.Watcher() != nil {
		watch = q.Watcher().WatchCredential()
		defer watch.Stop()
		revoked = watch.Done()
	}
	var expired <-chan time.Time
	if d := time.Duration(s.cfg.MaxLifetime); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		expired = t.C
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(event string, data []byte) bool {
		buf := make([]byte, 0, len(event)+len(data)+16)
		buf = append(buf, "event: "...)
		buf = append(buf, event...)
		buf = append(buf, "\ndata: "...)
		buf = append(buf, data...)
		buf = append(buf, "\n\n"...)
		if _, err := w.Write(buf); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if rc.Flush() != nil { // the headers reach the client now
		return nil
	}
	// An SSE comment every keepalive while no event flows: proxies between
	// here and the client keep an idle stream open, and a client gone
	// without closing is found by the failed write.
	keepalive := time.NewTimer(s.keepalive())
	defer keepalive.Stop()
	for {
		select {
		case <-keepalive.C:
			if _, err := w.Write(sseKeepalive); err != nil || rc.Flush() != nil {
				return nil
			}
			keepalive.Reset(s.keepalive())
			continue
		case ev := <-sink.events:
			switch {
			case ev.dropped:
				m.slowDropped.Inc()
				return nil
			case ev.end:
				if ev.errs != nil {
					// The hub's error ends the stream: its operation
					// failed, counted once when the stream's request is
					// (docs/design.md D83).
					if q != nil {
						q.SetOperationFailed()
					}
					send("next", errorsResult(ev.errs))
				}
				send("complete", nil)
				return nil
			default:
				if !send("next", ev.payload) {
					return nil
				}
				keepalive.Reset(s.keepalive())
			}
		case <-expired:
			send("next", errorsResult([]byte(`[{"message":"Subscription lifetime exceeded","extensions":{"code":"SUBSCRIPTION_EXPIRED"}}]`)))
			send("complete", nil)
			return nil
		case <-revoked:
			if reason := watch.Reason(); reason != "" {
				s.logger.Info("event stream ended: credential no longer valid", zap.String("reason", reason))
			}
			return nil // cut, as a tunnelled stream is
		case <-r.Context().Done():
			return nil
		}
	}
}

func errorsResult(errs []byte) []byte {
	return append(append([]byte(`{"errors":`), errs...), '}')
}

// sseKeepalive is an SSE comment line: every client ignores it.
var sseKeepalive = []byte(":\n\n")

// keepalive is the interval of WebSocket pings and event-stream comments.
func (s *Shell) keepalive() time.Duration {
	if d := time.Duration(s.cfg.Keepalive); d > 0 {
		return d
	}
	return 30 * time.Second
}

func (s *Shell) sendBuffer() int {
	if n := s.cfg.SendBuffer; n > 0 {
		return n
	}
	return 64
}

// sseEvent is one event for the stream, the end, or the drop.
type sseEvent struct {
	payload []byte
	end     bool
	errs    []byte
	dropped bool
}

// sseSink is subhub.Sink for an event stream: a bounded channel the
// handler drains; full, the stream is dropped (the fan-out never waits).
type sseSink struct {
	events chan sseEvent
	once   sync.Once
}

func (s *sseSink) Next(payload []byte) bool {
	select {
	case s.events <- sseEvent{payload: payload}:
		return true
	default:
		s.drop()
		return false
	}
}

func (s *sseSink) End(errs []byte) {
	select {
	case s.events <- sseEvent{end: true, errs: errs}:
	default:
		s.drop()
	}
}

// drop replaces what is queued with the drop marker.
func (s *sseSink) drop() {
	s.once.Do(func() {
		for {
			select {
			case <-s.events:
				continue
			default:
			}
			break
		}
		select {
		case s.events <- sseEvent{dropped: true}:
		default:
		}
	})
}
