package contract

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type stubBudget struct{ name string }

func (stubBudget) Spend(context.Context, int64, http.Header) (CostDecision, error) {
	return CostDecision{Allowed: true}, nil
}

type stubCharger struct{}

func (stubCharger) Charge(context.Context) (bool, time.Duration, error) { return true, 0, nil }

type stubWatcher struct{}

func (stubWatcher) WatchCredential() CredentialWatch { return nil }

// secretSigner is an IdentitySource signing with SignIdentity.
type secretSigner struct{ caller Caller }

func (s secretSigner) FreshIdentity(now time.Time) (string, error) {
	return SignIdentity([]byte(strings.Repeat("s", IdentityMinSecretLen)), s.caller, now, IdentityMaxTTL)
}

type otherKey struct{}

// TestAttachRequestOnce: the first AttachRequest makes the value on a copy of
// the request; later ones find it without a copy, so every handler of the
// chain fills and reads the same value.
func TestAttachRequestOnce(t *testing.T) {
	r0 := httptest.NewRequest("POST", "/", nil)
	if _, ok := RequestFrom(r0.Context()); ok {
		t.Fatal("a request value out of nowhere")
	}
	r1, q1 := AttachRequest(r0)
	if r1 == r0 {
		t.Fatal("the first attach did not copy the request")
	}
	r2, q2 := AttachRequest(r1)
	if r2 != r1 || q2 != q1 {
		t.Fatal("a second attach made a second value")
	}
	// a context derived from the request's still finds it
	ctx, cancel := context.WithCancel(context.WithValue(r2.Context(), otherKey{}, "v"))
	defer cancel()
	if q, ok := RequestFrom(ctx); !ok || q != q1 {
		t.Fatal("a derived context lost the request value")
	}
	if ctx.Value(otherKey{}) != "v" {
		t.Fatal("parent value lost")
	}
}

// TestRequestSlots: each slot reads back what its owner wrote; the later
// writer of a slot wins.
func TestRequestSlots(t *testing.T) {
	r, q := AttachRequest(httptest.NewRequest("POST", "/", nil))
	if _, ok := q.Caller(); ok || q.Bearer() != "" || q.Watcher() != nil || q.Charger() != nil || q.CostBudget() != nil {
		t.Fatal("a new value is not empty")
	}
	if _, ok := q.GraphQL(); ok {
		t.Fatal("a new value has a decoded GraphQL request")
	}
	caller := &Caller{KeyID: "key_1", Org: "acme", Tier: "free", Env: "live", Families: []string{"bills"}}
	q.SetCredential(caller, "cg_live_secret", stubWatcher{})
	q.SetCharger(stubCharger{})
	q.SetCostBudget(stubBudget{"a"})
	q.SetCostBudget(stubBudget{"b"})
	q.SetGraphQL(GraphQLRequest{Query: []byte("{a}")})
	if c, ok := q.Caller(); !ok || c != caller {
		t.Fatal("caller")
	}
	if q.Watcher() == nil || q.Charger() == nil {
		t.Fatal("watcher or charger lost")
	}
	if b := q.CostBudget(); b != (CostBudget)(stubBudget{"b"}) {
		t.Fatalf("budget %v: the later writer must win", b)
	}
	if g, ok := q.GraphQL(); !ok || string(g.Query) != "{a}" {
		t.Fatal("graphql request")
	}
	if tok, ok := BearerFromRequest(r); !ok || tok != "cg_live_secret" {
		t.Fatalf("bearer = %q %v", tok, ok)
	}
	if s := fmt.Sprint(r.Context()); strings.Contains(s, "secret") {
		t.Fatalf("context string shows the token: %s", s)
	}
	if q.IdentitySource() != nil {
		t.Fatal("an identity source nobody set")
	}
	q.SetIdentitySource(secretSigner{*caller})
	tok, err := q.IdentitySource().FreshIdentity(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if c, err := VerifyIdentity([]byte(strings.Repeat("s", IdentityMinSecretLen)), tok, time.Now()); err != nil || c.KeyID() != "key_1" {
		t.Fatalf("fresh assertion %v %v", c, err)
	}
}

// TestDerive: a request made on the caller's behalf keeps the credential and
// starts with empty slots.
func TestDerive(t *testing.T) {
	_, q := AttachRequest(httptest.NewRequest("POST", "/", nil))
	q.SetCredential(&Caller{KeyID: "k"}, "tok", stubWatcher{})
	q.SetIdentitySource(secretSigner{Caller{KeyID: "k"}})
	q.SetCostBudget(stubBudget{"a"})
	q.SetGraphQL(GraphQLRequest{Query: []byte("{a}")})
	d, ok := RequestFrom(WithRequest(context.Background(), q.Derive()))
	if !ok {
		t.Fatal("WithRequest lost the value")
	}
	if c, _ := d.Caller(); c == nil || c.KeyID != "k" || d.Bearer() != "tok" || d.Watcher() == nil || d.IdentitySource() == nil {
		t.Fatal("credential not carried")
	}
	if _, ok := d.GraphQL(); ok || d.CostBudget() != nil {
		t.Fatal("slots carried over")
	}
}

func TestBearerFromHeader(t *testing.T) {
	r := httptest.NewRequest("POST", "/", nil)
	r.Header.Set("Authorization", "Bearer header-token")
	if tok, ok := BearerFromRequest(r); !ok || tok != "header-token" {
		t.Fatalf("header fallback = %q %v", tok, ok)
	}
	// a request value without a recorded bearer still falls back
	r, _ = AttachRequest(r)
	if tok, ok := BearerFromRequest(r); !ok || tok != "header-token" {
		t.Fatalf("header fallback with a value = %q %v", tok, ok)
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

// TestAttachAllocations: attaching costs two allocations (the value with its
// context node, the request copy); finding it again, none.
func TestAttachAllocations(t *testing.T) {
	r := httptest.NewRequest("POST", "/", nil)
	if n := testing.AllocsPerRun(100, func() { _, _ = AttachRequest(r) }); n != 2 {
		t.Fatalf("first attach: %v allocations, want 2", n)
	}
	r2, _ := AttachRequest(r)
	if n := testing.AllocsPerRun(100, func() { _, q := AttachRequest(r2); q.SetCostBudget(stubBudget{}) }); n != 0 {
		t.Fatalf("attach again: %v allocations, want 0", n)
	}
}
