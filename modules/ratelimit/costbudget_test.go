package ratelimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// TestCostBudgetThroughTheHandler (memory store and Redis): with `rate 100/m
// cost 100/m`, the next handler spends 30 points per document: RateLimit
// switches to the budget once it is the closer policy, the fourth document
// is refused with the exact retry and counted as refused in usage, a
// document over the whole budget is OverBudget without touching the store,
// and the request quota is charged once per request whatever the budget says.
func TestCostBudgetThroughTheHandler(t *testing.T) {
	_, prefix := testenv.Redis(t)
	for name, l := range map[string]*limiter{
		"memory": newLimiter(limiterConfig{mode: modeLocal, maxKeys: 10_000}), // 100 was 1 key per shard: the budget key was evicted by the request key 1 time in 64
		"redis":  testLimiter(t, testenv.RedisAddr(), prefix, 0.02),
	} {
		t.Run(name, func(t *testing.T) {
			l.usage = &usageSink{meter: usage.NewMeter(0)} // a meter without a database: read by Drain below
			t.Cleanup(func() { l.usage = nil })            // runs before the limiter's Destruct
			h := &Handler{Key: "{" + contract.CivicKeyID + "}", Rate: "100/m", Policy: "p", Cost: "100/m", limiter: l,
				logger: zap.NewNop(), policies: &policyCache{share: l.share, maxLease: l.maxLease}}
			h.parseTemplates()
			serve := func(cost int64) (contract.CostDecision, http.Header) {
				t.Helper()
				req := httptest.NewRequest(http.MethodPost, "/v1/graphql", nil)
				repl := caddy.NewReplacer()
				repl.Set(contract.CivicKeyID, "key_"+name)
				repl.Set(contract.CivicOrg, "org_1")
				req = req.WithContext(context.WithValue(req.Context(), caddy.ReplacerCtxKey, repl))
				var dec contract.CostDecision
				next := nextFunc(func(w http.ResponseWriter, r *http.Request) error {
					q, ok := contract.RequestFrom(r.Context())
					if !ok || q.CostBudget() == nil {
						t.Fatal("no cost budget in the request")
					}
					var err error
					if dec, err = q.CostBudget().Spend(r.Context(), cost, w.Header()); err != nil {
						t.Fatal(err)
					}
					if !dec.Allowed {
						w.WriteHeader(http.StatusTooManyRequests)
					}
					return nil
				})
				w := &statusWriter{h: http.Header{}}
				if err := h.ServeHTTP(w, req, next); err != nil {
					t.Fatal(err)
				}
				return dec, w.h
			}
			dec, hdr := serve(30)
			if !dec.Allowed || hdr.Get("RateLimit-Policy") != `"p";q=100;w=60, "p-cost";q=100;w=60` ||
				hdr.Get("RateLimit") != `"p-cost";r=70;t=60` {
				t.Fatalf("first document: %+v %v", dec, hdr)
			}
			serve(30)
			serve(30)
			dec, hdr = serve(30)
			if dec.Allowed || dec.OverBudget || dec.RetryAfter <= 0 || dec.RetryAfter > time.Minute ||
				hdr.Get("RateLimit") != `"p-cost";r=10;t=`+strconv.FormatInt(int64(dec.RetryAfter/time.Second), 10) {
				t.Fatalf("fourth document: %+v %v", dec, hdr)
			}
			if dec, _ = serve(101); !dec.OverBudget || dec.Allowed || dec.Budget != (contract.Rate{Quota: 100, Window: time.Minute}) {
				t.Fatalf("over the whole budget: %+v", dec)
			}
			dec, hdr = serve(10) // the last 10 points
			if !dec.Allowed || hdr.Get("RateLimit") != `"p-cost";r=0;t=60` {
				t.Fatalf("last points: %+v %v", dec, hdr)
			}
			rows := l.usage.meter.Drain()
			if len(rows) != 1 || rows[0].Admitted != 5 || rows[0].Refused != 1 || rows[0].Cost != 100 || rows[0].OrgID != "org_1" {
				t.Fatalf("usage %+v: want 5 admitted (the document over the whole budget is a document-limit answer), 1 refused by the budget, 100 points", rows)
			}
		})
	}
}
