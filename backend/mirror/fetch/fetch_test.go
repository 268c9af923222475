package fetch_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/civicgate/civicgate/backend/mirror/fetch"
)

func TestRetriesHonourRetryAfterAndHideKey(t *testing.T) {
	var calls atomic.Int32
	var first, second time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			first = time.Now()
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			second = time.Now()
			w.WriteHeader(http.StatusBadGateway)
		default:
			if r.URL.Query().Get("api_key") != "k3y-secret" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			_, _ = w.Write([]byte("ok"))
		}
	}))
	defer srv.Close()
	c := &fetch.Client{Key: "k3y-secret", KeyParam: "api_key", BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}
	body, err := c.Get(context.Background(), srv.URL+"/x?a=1")
	if err != nil || string(body) != "ok" || calls.Load() != 3 {
		t.Fatalf("%q %v calls %d", body, err, calls.Load())
	}
	if second.Sub(first) < 900*time.Millisecond {
		t.Fatalf("Retry-After: 1 not honoured: retried after %v", second.Sub(first))
	}
}

func TestClientErrorsAreNotRetriedAndNeverShowTheKey(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	c := &fetch.Client{Key: "k3y-secret", KeyParam: "api_key", BaseDelay: time.Millisecond}
	_, err := c.Get(context.Background(), srv.URL+"/x")
	if err == nil || calls.Load() != 1 || strings.Contains(err.Error(), "k3y-secret") || !strings.Contains(err.Error(), "403") {
		t.Fatalf("%v calls %d", err, calls.Load())
	}
	// Transport errors after retries: still no key.
	srv.Close()
	c.MaxAttempts = 2
	_, err = c.Get(context.Background(), srv.URL+"/x")
	if err == nil || strings.Contains(err.Error(), "k3y-secret") {
		t.Fatalf("%v", err)
	}
}

func TestHeaderKeyAndRateLimit(t *testing.T) {
	var auth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		_, _ = w.Write([]byte("{}"))
	}))
	defer srv.Close()
	c := &fetch.Client{Key: "abc", KeyHeader: "Authorization", KeyPrefix: "Token ", Limiter: fetch.PerMinute(600)}
	start := time.Now()
	for range 3 {
		if _, err := c.Get(context.Background(), srv.URL); err != nil {
			t.Fatal(err)
		}
	}
	if auth.Load() != "Token abc" {
		t.Fatalf("auth %v", auth.Load())
	}
	// 600/min = one every 100 ms, burst 1: three requests take at least ~200 ms.
	if el := time.Since(start); el < 180*time.Millisecond {
		t.Fatalf("three requests in %v: not rate limited", el)
	}
}
