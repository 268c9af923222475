package otherbackend

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/civicgate/civicgate/examples/other-backend/library"
)

// receivedRequest is one HTTP request as the library engine received it (a
// WebSocket upgrade included; its body is empty).
type receivedRequest struct {
	Method, URL string
	Header      http.Header
	Body        string
}

// receivedOperation is one operation as the engine was about to run it, on
// any transport (a WebSocket subscribe frame included).
type receivedOperation struct {
	Query      string
	Variables  map[string]any
	Extensions map[string]any
	Header     http.Header
}

// upstreamRecorder keeps everything the library engine received: requests
// (headers and bodies), WebSocket connection_init payloads and operations.
type upstreamRecorder struct {
	mu         sync.Mutex
	requests   []receivedRequest
	inits      []transport.InitPayload
	operations []receivedOperation
}

// wrap records every request before next serves it.
func (u *upstreamRecorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		u.mu.Lock()
		u.requests = append(u.requests, receivedRequest{Method: r.Method, URL: r.URL.String(), Header: r.Header.Clone(), Body: string(b)})
		u.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// hooks are the engine options that record connection_init payloads and
// operations.
func (u *upstreamRecorder) hooks(o library.Options) library.Options {
	o.OnInit = func(_ context.Context, p transport.InitPayload) {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.inits = append(u.inits, p)
	}
	o.OnOperation = func(_ context.Context, op *graphql.OperationContext) {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.operations = append(u.operations, receivedOperation{Query: op.RawQuery, Variables: op.Variables, Extensions: op.Extensions, Header: op.Headers.Clone()})
	}
	return o
}

func (u *upstreamRecorder) requestCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.requests)
}

func (u *upstreamRecorder) lastRequest() receivedRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.requests) == 0 {
		return receivedRequest{}
	}
	return u.requests[len(u.requests)-1]
}

func (u *upstreamRecorder) lastOperation() receivedOperation {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.operations) == 0 {
		return receivedOperation{}
	}
	return u.operations[len(u.operations)-1]
}

// upgrades are the WebSocket upgrade requests received.
func (u *upstreamRecorder) upgrades() []receivedRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []receivedRequest
	for _, r := range u.requests {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			out = append(out, r)
		}
	}
	return out
}

// operationsWith counts the operations whose document contains s.
func (u *upstreamRecorder) operationsWith(s string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, op := range u.operations {
		if strings.Contains(op.Query, s) {
			n++
		}
	}
	return n
}

func (u *upstreamRecorder) initCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.inits)
}

// transcript is everything received, as text.
func (u *upstreamRecorder) transcript() (string, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	b, err := json.Marshal(map[string]any{"requests": u.requests, "inits": u.inits, "operations": u.operations})
	if err != nil {
		return "", fmt.Errorf("encode what the upstream received: %w", err)
	}
	return string(b), nil
}

// assertNeverSaw fails the test if any key reached the engine (leaks).
func (u *upstreamRecorder) assertNeverSaw(t *testing.T, keys ...string) {
	t.Helper()
	for _, leak := range u.leaks(keys...) {
		t.Error(leak)
	}
}

// leaks describes every way a key (or its last 20 characters), or an
// Authorization header, reached the engine: in a header, a body, a
// connection_init payload or an operation.
func (u *upstreamRecorder) leaks(keys ...string) []string {
	var out []string
	text, err := u.transcript()
	if err != nil {
		return []string{err.Error()}
	}
	for _, k := range keys {
		if strings.Contains(text, k) || (len(k) > 20 && strings.Contains(text, k[len(k)-20:])) {
			out = append(out, fmt.Sprintf("the upstream received a bearer key (…%s)", k[:min(len(k), 8)]))
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, r := range u.requests {
		if r.Header.Get("Authorization") != "" {
			out = append(out, fmt.Sprintf("the upstream received an Authorization header on %s %s", r.Method, r.URL))
		}
	}
	for _, p := range u.inits {
		if p.Authorization() != "" {
			out = append(out, "the upstream received an Authorization in connection_init")
		}
	}
	return out
}
