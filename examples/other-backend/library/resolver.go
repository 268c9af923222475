package library

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
)

// Resolver answers the library schema from a Catalog and publishes every
// borrow and return to LoanEvents.
type Resolver struct {
	Catalog *Catalog
	Events  *LoanEvents
}

var _ ResolverRoot = (*Resolver)(nil)

func (r *Resolver) Author() AuthorResolver             { return authorResolver{r} }
func (r *Resolver) Book() BookResolver                 { return bookResolver{r} }
func (r *Resolver) Loan() LoanResolver                 { return loanResolver{r} }
func (r *Resolver) Mutation() MutationResolver         { return mutationResolver{r} }
func (r *Resolver) Query() QueryResolver               { return queryResolver{r} }
func (r *Resolver) Subscription() SubscriptionResolver { return subscriptionResolver{r} }

type (
	authorResolver       struct{ *Resolver }
	bookResolver         struct{ *Resolver }
	loanResolver         struct{ *Resolver }
	mutationResolver     struct{ *Resolver }
	queryResolver        struct{ *Resolver }
	subscriptionResolver struct{ *Resolver }
)

// count is a first argument (the schema defaults it to 20).
func count(first *int) int {
	if first == nil {
		return 20
	}
	return *first
}

func (r queryResolver) Books(_ context.Context, first *int, after *string) (*BookConnection, error) {
	var from string
	if after != nil {
		from = *after
	}
	nodes, next := r.Catalog.Books(count(first), from)
	page := &BookConnection{Nodes: nodes}
	if next != "" {
		page.EndCursor = &next
	}
	return page, nil
}

func (r queryResolver) Book(_ context.Context, id string) (*Book, error) {
	b, err := r.Catalog.Book(id)
	if err != nil {
		return nil, nil // an unknown id is null, as the schema allows
	}
	return &b, nil
}

func (r queryResolver) Authors(_ context.Context, first *int) ([]Author, error) {
	return r.Catalog.Authors(count(first)), nil
}

func (r queryResolver) Loans(_ context.Context, memberID string, first *int) ([]Loan, error) {
	return r.Catalog.Loans(memberID, count(first)), nil
}

func (r authorResolver) Books(_ context.Context, obj *Author, first *int) ([]Book, error) {
	return r.Catalog.BooksBy(obj.ID, count(first)), nil
}

func (r bookResolver) Author(_ context.Context, obj *Book) (*Author, error) {
	a, err := r.Catalog.Author(obj.AuthorID)
	if err != nil {
		return nil, fmt.Errorf("author of %s: %w", obj.ID, err)
	}
	return &a, nil
}

func (r loanResolver) Book(_ context.Context, obj *Loan) (*Book, error) {
	b, err := r.Catalog.Book(obj.BookID)
	if err != nil {
		return nil, fmt.Errorf("book of %s: %w", obj.ID, err)
	}
	return &b, nil
}

func (r mutationResolver) BorrowBook(ctx context.Context, bookID string, memberID *string) (*Loan, error) {
	member := "m1"
	if memberID != nil {
		member = *memberID
	}
	l, err := r.Catalog.Borrow(bookID, member)
	if err != nil {
		return nil, publicError(ctx, err)
	}
	r.Events.Publish(&LoanEvent{Kind: LoanEventKindBorrowed, Loan: &l})
	return &l, nil
}

func (r mutationResolver) ReturnBook(ctx context.Context, loanID string) (*Loan, error) {
	l, err := r.Catalog.Return(loanID)
	if err != nil {
		return nil, publicError(ctx, err)
	}
	r.Events.Publish(&LoanEvent{Kind: LoanEventKindReturned, Loan: &l})
	return &l, nil
}

func (r subscriptionResolver) LoanEvents(ctx context.Context) (<-chan *LoanEvent, error) {
	return r.Events.Subscribe(ctx), nil
}

// publicError is a catalog error as the client sees it: its message, at the
// field's path.
func publicError(ctx context.Context, err error) error {
	return graphql.ErrorOnPath(ctx, err)
}
