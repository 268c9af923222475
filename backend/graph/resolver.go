package graph

// Resolvers delegate to backend/store. Client mistakes (records.InputError) become GraphQL errors with
// extensions.code BAD_USER_INPUT; every other error is a server fault that backend/httpapi turns into a 500.

import (
	"context"

	"github.com/civicgate/civicgate/backend/records"
	"github.com/civicgate/civicgate/backend/store"
)

// Resolver is the root resolver.
type Resolver struct {
	Store *store.Store
}

// Bills is the resolver for the bills field.
func (r *queryResolver) Bills(ctx context.Context, input *records.BillsInput) (*records.Page[records.Bill], error) {
	if input == nil {
		input = &records.BillsInput{}
	}
	p, err := r.Store.Bills(ctx, *input)
	return pageOrError(ctx, p, err)
}

// Bill is the resolver for the bill field.
func (r *queryResolver) Bill(ctx context.Context, id string) (*records.Bill, error) {
	return r.Store.Bill(ctx, id)
}

// Members is the resolver for the members field.
func (r *queryResolver) Members(ctx context.Context, input *records.MembersInput) (*records.Page[records.Member], error) {
	if input == nil {
		input = &records.MembersInput{}
	}
	p, err := r.Store.Members(ctx, *input)
	return pageOrError(ctx, p, err)
}

// RegulatoryFilings is the resolver for the regulatoryFilings field.
func (r *queryResolver) RegulatoryFilings(ctx context.Context, input *records.RegulatoryFilingsInput) (*records.Page[records.RegulatoryFiling], error) {
	if input == nil {
		input = &records.RegulatoryFilingsInput{}
	}
	p, err := r.Store.RegulatoryFilings(ctx, *input)
	return pageOrError(ctx, p, err)
}

// FederalBudgets is the resolver for the federalBudgets field.
func (r *queryResolver) FederalBudgets(ctx context.Context, input records.FederalBudgetsInput) (*records.Page[records.FederalBudgetLine], error) {
	p, err := r.Store.FederalBudgets(ctx, input)
	return pageOrError(ctx, p, err)
}

// LobbyingDisclosures is the resolver for the lobbyingDisclosures field.
func (r *queryResolver) LobbyingDisclosures(ctx context.Context, input *records.LobbyingDisclosuresInput) (*records.Page[records.LobbyingDisclosure], error) {
	if input == nil {
		input = &records.LobbyingDisclosuresInput{}
	}
	p, err := r.Store.LobbyingDisclosures(ctx, *input)
	return pageOrError(ctx, p, err)
}

// Query returns QueryResolver implementation.
func (r *Resolver) Query() QueryResolver { return &queryResolver{r} }

type queryResolver struct{ *Resolver }
