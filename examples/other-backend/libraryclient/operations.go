package libraryclient

import (
	"context"
	"fmt"
	"net/http"

	graphql "github.com/hasura/go-graphql-client"
)

// LoanView is the part of a Loan the tests select.
type LoanView struct {
	ID       string `graphql:"id"`
	MemberID string `graphql:"memberId"`
	Due      string `graphql:"due"`
	Returned bool   `graphql:"returned"`
	Book     struct {
		Title string `graphql:"title"`
	} `graphql:"book"`
}

// LoanEventView is one loanEvents message.
type LoanEventView struct {
	Kind string   `graphql:"kind"`
	Loan LoanView `graphql:"loan"`
}

// HTTP is a library API client over POST with an optional bearer key.
type HTTP struct {
	*graphql.Client
}

// NewHTTP returns a client of the API at url that sends key (when not empty)
// as a bearer token.
func NewHTTP(url, key string) HTTP {
	c := graphql.NewClient(url, http.DefaultClient)
	if key != "" {
		c = c.WithRequestModifier(func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+key) })
	}
	return HTTP{c}
}

// Borrow runs borrowBook.
func (c HTTP) Borrow(ctx context.Context, bookID string) (LoanView, error) {
	var m struct {
		BorrowBook LoanView `graphql:"borrowBook(bookId: $bookId)"`
	}
	if err := c.Mutate(ctx, &m, map[string]any{"bookId": graphql.ID(bookID)}); err != nil {
		return LoanView{}, fmt.Errorf("borrowBook %s: %w", bookID, err)
	}
	return m.BorrowBook, nil
}

// Return runs returnBook.
func (c HTTP) Return(ctx context.Context, loanID string) (LoanView, error) {
	var m struct {
		ReturnBook LoanView `graphql:"returnBook(loanId: $loanId)"`
	}
	if err := c.Mutate(ctx, &m, map[string]any{"loanId": graphql.ID(loanID)}); err != nil {
		return LoanView{}, fmt.Errorf("returnBook %s: %w", loanID, err)
	}
	return m.ReturnBook, nil
}

// Titles runs books and returns the titles of the first page.
func (c HTTP) Titles(ctx context.Context, first int) ([]string, error) {
	var q struct {
		Books struct {
			Nodes []struct {
				Title string `graphql:"title"`
			} `graphql:"nodes"`
		} `graphql:"books(first: $first)"`
	}
	if err := c.Query(ctx, &q, map[string]any{"first": first}); err != nil {
		return nil, fmt.Errorf("books: %w", err)
	}
	var out []string
	for _, n := range q.Books.Nodes {
		out = append(out, n.Title)
	}
	return out, nil
}

// Loans runs loans for the member.
func (c HTTP) Loans(ctx context.Context, memberID string) ([]LoanView, error) {
	var q struct {
		Loans []LoanView `graphql:"loans(memberId: $memberId)"`
	}
	if err := c.Query(ctx, &q, map[string]any{"memberId": graphql.ID(memberID)}); err != nil {
		return nil, fmt.Errorf("loans of %s: %w", memberID, err)
	}
	return q.Loans, nil
}
