package credential

import (
	"context"
	"net/http/httptest"
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
