package ratelimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// TestUsageCountsMCPCalls: a request civic_mcp made for a tool call
// (contract.TransportMCP in the request value) is counted in the usage row's
// MCP column, admitted or refused; a plain request is not.
func TestUsageCountsMCPCalls(t *testing.T) {
	l := newLimiter(limiterConfig{mode: modeLocal, maxKeys: 10_000})
	l.usage = &usageSink{meter: usage.NewMeter(0)}
	t.Cleanup(func() { l.usage = nil })
	h := &Handler{Key: "{" + contract.CivicKeyID + "}", Rate: "3/m", Policy: "p", limiter: l,
		logger: zap.NewNop(), policies: &policyCache{share: l.share, maxLease: l.maxLease}}
	h.parseTemplates()
	serve := func(mcp bool) int {
		req := httptest.NewRequest(http.MethodPost, "/v1/graphql", nil)
		repl := caddy.NewReplacer()
		repl.Set(contract.CivicKeyID, "key_mcp")
		repl.Set(contract.CivicOrg, "org_1")
		req = req.WithContext(context.WithValue(req.Context(), caddy.ReplacerCtxKey, repl))
		if mcp {
			var q contract.Request
			q.SetTransport(contract.TransportMCP)
			req = req.WithContext(contract.WithRequest(req.Context(), q))
		}
		w := &statusWriter{h: http.Header{}}
		if err := h.ServeHTTP(w, req, nextFunc(func(http.ResponseWriter, *http.Request) error { return nil })); err != nil {
			t.Fatal(err)
		}
		return w.status
	}
	for i, mcp := range []bool{true, false, true} {
		if s := serve(mcp); s != 0 {
			t.Fatalf("request %d refused: %d", i, s)
		}
	}
	if s := serve(true); s != http.StatusTooManyRequests {
		t.Fatalf("fourth request: %d, want 429", s)
	}
	rows := l.usage.meter.Drain()
	if len(rows) != 1 || rows[0].Admitted != 3 || rows[0].Refused != 1 || rows[0].MCP != 3 {
		t.Fatalf("usage %+v: want 3 admitted, 1 refused, 3 of the 4 through MCP", rows)
	}
}
