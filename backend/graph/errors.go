package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/civicgate/civicgate/backend/records"
	"github.com/civicgate/civicgate/backend/store"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// CodeBadUserInput is the extensions.code of client mistakes (docs/design.md D4).
const CodeBadUserInput = "BAD_USER_INPUT"

// pageOrError returns p, or err translated: an InputError becomes a BAD_USER_INPUT GraphQL error at the
// field's path; other errors pass through as server faults.
func pageOrError[T any](ctx context.Context, p records.Page[T], err error) (*records.Page[T], error) {
	if err == nil {
		return &p, nil
	}
	if ie, ok := store.IsInputError(err); ok {
		return nil, &gqlerror.Error{
			Message:    ie.Message,
			Path:       graphql.GetPath(ctx),
			Extensions: map[string]any{"code": CodeBadUserInput, "field": "input." + ie.Field},
		}
	}
	return nil, err
}

// IsUserError reports whether a resolver error is a client mistake rather than a server fault.
func IsUserError(err *gqlerror.Error) bool {
	return err != nil && err.Extensions != nil && err.Extensions["code"] == CodeBadUserInput
}
