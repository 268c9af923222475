package contract

import (
	"context"
	"net/http"
	"testing"
)

type stubBudget struct{ name string }

type budgetTestKey struct{}

func (stubBudget) Spend(context.Context, int64, http.Header) (CostDecision, error) {
	return CostDecision{Allowed: true}, nil
}

// TestAttachCostBudget: on civic_auth's request context the budget is
// attached without a new context (the request need not be copied); on any
// other context it is wrapped; either way CostBudgetFrom finds it, and the
// bearer token and watcher stay readable.
func TestAttachCostBudget(t *testing.T) {
	base := WithBearer(context.Background(), "tok")
	a := stubBudget{"a"}
	if got := AttachCostBudget(base, a); got != base {
		t.Fatal("attaching to civic_auth's context made a new one")
	}
	if b, ok := CostBudgetFrom(base); !ok || b != (CostBudget)(a) {
		t.Fatalf("budget %v %v", b, ok)
	}
	if tok, ok := Bearer(base); !ok || tok != "tok" {
		t.Fatal("bearer lost")
	}
	// a second budget never replaces the first in place
	b2 := stubBudget{"b"}
	wrapped := AttachCostBudget(base, b2)
	if wrapped == base {
		t.Fatal("a second budget overwrote the first in place")
	}
	if got, _ := CostBudgetFrom(wrapped); got != (CostBudget)(b2) {
		t.Fatalf("wrapped budget %v", got)
	}
	// a context that is not civic_auth's (or was wrapped after it) is wrapped
	plain := context.WithValue(WithBearer(context.Background(), "t2"), budgetTestKey{}, 1)
	if got := AttachCostBudget(plain, a); got == plain {
		t.Fatal("a context that is not civic_auth's own was changed in place")
	} else if b, ok := CostBudgetFrom(got); !ok || b != (CostBudget)(a) {
		t.Fatalf("budget on a wrapped context %v %v", b, ok)
	}
	if _, ok := CostBudgetFrom(context.Background()); ok {
		t.Fatal("a budget out of nowhere")
	}
}
