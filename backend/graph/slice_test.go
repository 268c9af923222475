package graph

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
)

// TestGeneratedListsMarshalInOrder: generated.go went through doc.go's
// rewrite (a bare `gqlgen generate` puts back one goroutine per element).
func TestGeneratedListsMarshalInOrder(t *testing.T) {
	b, err := os.ReadFile("generated.go")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	if strings.Contains(src, "graphql.MarshalSliceConcurrently(") {
		t.Fatal("generated.go calls graphql.MarshalSliceConcurrently: regenerate with `go generate ./backend/graph`, not gqlgen alone")
	}
	if !strings.Contains(src, "marshalSliceInOrder(") {
		t.Fatal("generated.go marshals no list with marshalSliceInOrder")
	}
}

func TestMarshalSliceInOrder(t *testing.T) {
	var recovered []any
	ctx := graphql.WithResponseContext(context.Background(), graphql.DefaultErrorPresenter,
		func(_ context.Context, p any) error {
			recovered = append(recovered, p)
			return errors.New("internal system error")
		})
	var order []int
	marshal := func(ctx context.Context, i int) graphql.Marshaler {
		if fc := graphql.GetFieldContext(ctx); fc == nil || fc.Index == nil || *fc.Index != i {
			t.Errorf("element %d: field context %+v", i, fc)
		}
		order = append(order, i) // no lock: a data race under -race if elements ran concurrently
		if i == 1 {
			panic("boom")
		}
		return graphql.MarshalInt(i)
	}
	got := marshalSliceInOrder(ctx, 3, 0, false, marshal)
	if len(got) != 3 || got[1] != graphql.Null || got[0] == graphql.Null || got[2] == graphql.Null {
		t.Fatalf("marshalled %v: want the panicking element null and the others set", got)
	}
	if len(order) != 3 || order[0] != 0 || order[1] != 1 || order[2] != 2 {
		t.Fatalf("order %v", order)
	}
	if len(recovered) != 1 || recovered[0] != "boom" {
		t.Fatalf("recovered %v", recovered)
	}
	if errs := graphql.GetErrors(ctx); len(errs) != 1 || errs[0].Path.String() != "[1]" || errs[0].Message != "internal system error" {
		t.Fatalf("errors %v", errs)
	}
	if got := marshalSliceInOrder(ctx, 0, 0, false, marshal); len(got) != 0 {
		t.Fatalf("empty list marshalled to %v", got)
	}
}
