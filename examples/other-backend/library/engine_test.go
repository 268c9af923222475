package library_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/civicgate/civicgate/examples/other-backend/library"
	"github.com/civicgate/civicgate/examples/other-backend/libraryclient"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// engine is one library engine on a test server.
type engine struct {
	URL    string // http://…/graphql
	Events *library.LoanEvents
}

func startEngine(t *testing.T, o library.Options) engine {
	t.Helper()
	events := library.NewLoanEvents()
	mux := http.NewServeMux()
	mux.Handle("/graphql", library.NewHandler(library.NewCatalog(), events, o))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return engine{URL: srv.URL + "/graphql", Events: events}
}

// awaitSubscribers waits until the engine holds n open subscriptions.
func awaitSubscribers(t *testing.T, events *library.LoanEvents, n int) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, fmt.Sprintf("%d subscriptions at the engine", n), func() error {
		if got := events.Subscribers(); got != n {
			return fmt.Errorf("the engine holds %d", got)
		}
		return nil
	})
}

func TestQueriesAndMutations(t *testing.T) {
	e := startEngine(t, library.Options{})
	c := libraryclient.NewHTTP(e.URL, "")
	ctx := context.Background()

	titles, err := c.Titles(ctx, 2)
	if err != nil || len(titles) != 2 || titles[0] != "Middlemarch" {
		t.Fatalf("books: %v %v", titles, err)
	}
	loan, err := c.Borrow(ctx, "b3")
	if err != nil || loan.Book.Title != "Beloved" || loan.MemberID != "m1" || loan.Returned {
		t.Fatalf("borrow: %+v %v", loan, err)
	}
	if _, err := c.Borrow(ctx, "b3"); err == nil {
		t.Fatal("a book out on loan was lent again")
	}
	loans, err := c.Loans(ctx, "m1")
	if err != nil || len(loans) != 1 || loans[0].ID != loan.ID {
		t.Fatalf("loans: %+v %v", loans, err)
	}
	back, err := c.Return(ctx, loan.ID)
	if err != nil || !back.Returned || back.ID != loan.ID {
		t.Fatalf("return: %+v %v", back, err)
	}
	if _, err := c.Return(ctx, loan.ID); err == nil {
		t.Fatal("a loan was returned twice")
	}
}
