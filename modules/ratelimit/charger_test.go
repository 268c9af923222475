package ratelimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/contract"
)

// admit runs req through h and returns the status written (0: passed to
// next) and the Charger next found in the request, if any.
func admit(t *testing.T, h *Handler, req *http.Request) (int, contract.Charger) {
	t.Helper()
	var charger contract.Charger
	next := nextFunc(func(_ http.ResponseWriter, r *http.Request) error {
		if q, ok := contract.RequestFrom(r.Context()); ok {
			charger = q.Charger()
		}
		return nil
	})
	w := &statusWriter{h: http.Header{}}
	if err := h.ServeHTTP(w, req, next); err != nil {
		t.Fatal(err)
	}
	return w.status, charger
}

type nextFunc func(http.ResponseWriter, *http.Request) error

func (f nextFunc) ServeHTTP(w http.ResponseWriter, r *http.Request) error { return f(w, r) }

// upgrade returns req as a WebSocket upgrade request.
func upgrade(req *http.Request) *http.Request {
	up := req.Clone(req.Context())
	up.Header.Set("Upgrade", "WebSocket")
	up.Header.Set("Connection", "keep-alive, Upgrade")
	return up
}

// TestChargerSharesTheRequestQuota (memory store and Redis): at 3/m the
// upgrade takes one unit, two Charges are allowed, the third is refused with
// a retry time, and a plain request on the same key is then refused too.
func TestChargerSharesTheRequestQuota(t *testing.T) {
	_, prefix := testenv.Redis(t)
	for name, l := range map[string]*limiter{
		"memory": newLimiter(limiterConfig{mode: modeLocal, maxKeys: 1000}),
		"redis":  testLimiter(t, testenv.RedisAddr(), prefix, 0.02),
	} {
		t.Run(name, func(t *testing.T) {
			h, req, _ := benchHandler("3/m", l)
			status, c := admit(t, h, upgrade(req))
			if status != 0 || c == nil {
				t.Fatalf("upgrade: status %d, Charger %v", status, c)
			}
			ctx := context.Background()
			for i := range 2 {
				if ok, retry, err := c.Charge(ctx); !ok || retry != 0 || err != nil {
					t.Fatalf("charge %d: %v %s %v", i, ok, retry, err)
				}
			}
			ok, retry, err := c.Charge(ctx)
			if ok || err != nil || retry <= 0 || retry > time.Minute {
				t.Fatalf("third charge: allowed %v, retry %s, err %v; want refused with 0 < retry ≤ 60s", ok, retry, err)
			}
			if status, c := admit(t, h, req); status != http.StatusTooManyRequests || c != nil {
				t.Fatalf("plain request after the charges: status %d, Charger %v", status, c)
			}
		})
	}
}

// TestNoChargerWithoutUpgrade: plain requests, and requests with only half of
// the upgrade headers, carry no Charger.
func TestNoChargerWithoutUpgrade(t *testing.T) {
	h, req, _ := benchHandler("100/m", newLimiter(limiterConfig{mode: modeLocal, maxKeys: 1000}))
	for name, hdr := range map[string][2]string{
		"plain":             {"", ""},
		"upgrade h2c":       {"h2c", "Upgrade"},
		"no connection":     {"websocket", ""},
		"connection only":   {"", "upgrade"},
		"websocket in list": {"foo, websocket", "close"},
	} {
		r := req.Clone(req.Context())
		if hdr[0] != "" {
			r.Header.Set("Upgrade", hdr[0])
		}
		if hdr[1] != "" {
			r.Header.Set("Connection", hdr[1])
		}
		if status, c := admit(t, h, r); status != 0 || c != nil {
			t.Fatalf("%s: status %d, Charger %v", name, status, c)
		}
	}
	r := req.Clone(req.Context())
	r.Header["Upgrade"] = []string{"h2c", "foo ,\tWEBSOCKET"}
	r.Header["Connection"] = []string{"keep-alive", "UPGRADE"}
	if _, c := admit(t, h, r); c == nil {
		t.Fatal("upgrade over several header lines: no Charger")
	}
}

// TestChargerStoreDown: with Redis cut after the upgrade, a Charge follows
// on_store_error as a request would: open allows, closed returns an error,
// local decides in memory.
func TestChargerStoreDown(t *testing.T) {
	_, prefix := testenv.Redis(t)
	for _, mode := range []string{modeOpen, modeClosed, modeLocal} {
		t.Run(mode, func(t *testing.T) {
			proxy := testenv.NewProxy(t, testenv.RedisAddr())
			const timeout = 2 * time.Second
			client := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{proxy.Addr()},
				DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, MaxRetries: -1, ContextTimeoutEnabled: true})
			l := newLimiter(limiterConfig{redis: client, prefix: prefix + mode + ":", timeout: timeout, mode: mode,
				failures: 3, cooldown: time.Minute, maxKeys: 1000})
			t.Cleanup(func() { _ = l.Destruct() })
			h, req, _ := benchHandler("3/m", l)
			status, c := admit(t, h, upgrade(req))
			if status != 0 || c == nil {
				t.Fatalf("upgrade: status %d, Charger %v", status, c)
			}
			proxy.Cut()
			ok, _, err := c.Charge(context.Background())
			switch mode {
			case modeOpen, modeLocal:
				if !ok || err != nil {
					t.Fatalf("%s: allowed %v, err %v", mode, ok, err)
				}
			case modeClosed:
				if ok || err == nil {
					t.Fatalf("closed: allowed %v, err %v; want an error", ok, err)
				}
			}
		})
	}
}

// TestChargerOnUpgradeWithoutReplacer: a handler with a literal key and rate
// attaches a Charger to an upgrade that carries no Replacer, and its Charges
// draw on the same quota.
func TestChargerOnUpgradeWithoutReplacer(t *testing.T) {
	h := &Handler{Key: "fixed", Rate: "2/m", Policy: "p", limiter: newLimiter(limiterConfig{mode: modeLocal, maxKeys: 10}),
		policies: new(policyCache)}
	h.parseTemplates()
	status, c := admit(t, h, upgrade(httptest.NewRequest(http.MethodGet, "/v1/graphql", nil)))
	if status != 0 || c == nil {
		t.Fatalf("status %d, Charger %v", status, c)
	}
	if ok, _, _ := c.Charge(context.Background()); !ok {
		t.Fatal("second unit refused")
	}
	if ok, _, _ := c.Charge(context.Background()); ok {
		t.Fatal("third unit at 2/m allowed")
	}
}
