package contract

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestBearerFromContextWins(t *testing.T) {
	r := httptest.NewRequest("POST", "/", nil)
	r.Header.Set("Authorization", "Bearer header-token")
	if tok, ok := BearerFromRequest(r); !ok || tok != "header-token" {
		t.Fatalf("header fallback = %q %v", tok, ok)
	}
	r = r.WithContext(WithBearer(r.Context(), "ctx-token"))
	r.Header.Del("Authorization")
	if tok, ok := BearerFromRequest(r); !ok || tok != "ctx-token" {
		t.Fatalf("context = %q %v", tok, ok)
	}
}

func TestBearerAbsent(t *testing.T) {
	if _, ok := Bearer(context.Background()); ok {
		t.Fatal("empty context has a token")
	}
	for _, h := range []string{"", "Bearer", "Bearer ", "Basic abc", "Bearerabc"} {
		r := httptest.NewRequest("POST", "/", nil)
		if h != "" {
			r.Header.Set("Authorization", h)
		}
		if tok, ok := BearerFromRequest(r); ok {
			t.Fatalf("%q gave token %q", h, tok)
		}
	}
}

type otherKey struct{}

func TestWithBearerKeepsParentAndCancellation(t *testing.T) {
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), otherKey{}, "v"))
	ctx := WithBearer(parent, "cg_live_secret")
	if ctx.Value(otherKey{}) != "v" {
		t.Fatal("parent value lost")
	}
	if s := fmt.Sprint(ctx); strings.Contains(s, "secret") {
		t.Fatalf("context string shows the token: %s", s)
	}
	child, stop := context.WithCancel(ctx)
	defer stop()
	cancel()
	<-child.Done() // a derived context still sees the parent's cancellation
	if tok, ok := Bearer(child); !ok || tok != "cg_live_secret" {
		t.Fatalf("Bearer through a derived context = %q %v", tok, ok)
	}
	if tok, ok := Bearer(WithBearer(context.Background(), "")); ok {
		t.Fatalf("empty token reported as %q", tok)
	}
}
