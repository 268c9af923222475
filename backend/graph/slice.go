package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
)

// marshalSliceInOrder replaces graphql.MarshalSliceConcurrently in
// generated.go (doc.go's go:generate line rewrites the calls after gqlgen
// runs). gqlgen starts one goroutine per list element; every resolver of
// this schema is a plain struct field read from one page already in memory,
// so those goroutines only cost: a page of 25 bills spawned 25 and woke
// threads to run them. Elements are marshalled one after another with the
// same contract: each gets a FieldContext with its Index, and one whose
// marshalling panics becomes Null with the error recorded, unless
// omitPanicHandler. workerLimit has no meaning without concurrency.
func marshalSliceInOrder(ctx context.Context, length int, _ int64, omitPanicHandler bool,
	marshalElement func(ctx context.Context, i int) graphql.Marshaler) graphql.Array {
	ret := make(graphql.Array, length)
	for i := range length {
		fc := &graphql.FieldContext{Index: &i}
		childCtx := graphql.WithFieldContext(ctx, fc)
		if omitPanicHandler {
			ret[i] = marshalElement(childCtx, i)
			continue
		}
		ret[i] = marshalRecovering(childCtx, i, marshalElement)
	}
	return ret
}

func marshalRecovering(ctx context.Context, i int, marshalElement func(ctx context.Context, i int) graphql.Marshaler) (m graphql.Marshaler) {
	defer func() {
		if r := recover(); r != nil {
			graphql.AddError(ctx, graphql.Recover(ctx, r))
			m = graphql.Null
		}
	}()
	return marshalElement(ctx, i)
}
