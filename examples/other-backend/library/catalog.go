package library

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Book is one title on the shelves.
type Book struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	AuthorID string `json:"-"`
}

// Author wrote one or more books.
type Author struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Loan is one book lent to one member.
type Loan struct {
	ID       string `json:"id"`
	MemberID string `json:"memberId"`
	BookID   string `json:"-"`
	Due      string `json:"due"`
	Returned bool   `json:"returned"`
}

// ErrNotFound is returned for an id that names nothing.
var ErrNotFound = errors.New("not found")

// ErrUnavailable is returned when a book is already out or a loan already ended.
var ErrUnavailable = errors.New("unavailable")

// LoanPeriod is how long a loan runs.
const LoanPeriod = 21 * 24 * time.Hour

// Catalog holds the library's books, authors and loans in memory; it is safe
// for concurrent use.
type Catalog struct {
	mu       sync.Mutex
	books    []Book
	authors  []Author
	loans    []Loan
	nextLoan int
	now      func() time.Time
}

// NewCatalog returns a catalog with a few books and no loans.
func NewCatalog() *Catalog {
	return &Catalog{
		authors: []Author{{ID: "a1", Name: "George Eliot"}, {ID: "a2", Name: "Toni Morrison"}, {ID: "a3", Name: "Italo Calvino"}},
		books: []Book{
			{ID: "b1", Title: "Middlemarch", AuthorID: "a1"},
			{ID: "b2", Title: "Silas Marner", AuthorID: "a1"},
			{ID: "b3", Title: "Beloved", AuthorID: "a2"},
			{ID: "b4", Title: "Invisible Cities", AuthorID: "a3"},
		},
		now: time.Now,
	}
}

// Books returns up to first books after the book with id after ("" for the
// start), and the id to pass as after for the next page ("" at the end).
func (c *Catalog) Books(first int, after string) ([]Book, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := 0
	if after != "" {
		start = len(c.books)
		for i, b := range c.books {
			if b.ID == after {
				start = i + 1
				break
			}
		}
	}
	end := min(len(c.books), start+max(first, 0))
	page := append([]Book(nil), c.books[start:end]...)
	if end < len(c.books) && len(page) > 0 {
		return page, page[len(page)-1].ID
	}
	return page, ""
}

// Book returns the book with the id.
func (c *Catalog) Book(id string) (Book, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.books {
		if b.ID == id {
			return b, nil
		}
	}
	return Book{}, fmt.Errorf("book %q: %w", id, ErrNotFound)
}

// BooksBy returns up to first books by the author.
func (c *Catalog) BooksBy(authorID string, first int) []Book {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Book
	for _, b := range c.books {
		if b.AuthorID == authorID && len(out) < first {
			out = append(out, b)
		}
	}
	return out
}

// Authors returns up to first authors.
func (c *Catalog) Authors(first int) []Author {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Author(nil), c.authors[:min(len(c.authors), max(first, 0))]...)
}

// Author returns the author with the id.
func (c *Catalog) Author(id string) (Author, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.authors {
		if a.ID == id {
			return a, nil
		}
	}
	return Author{}, fmt.Errorf("author %q: %w", id, ErrNotFound)
}

// Loans returns up to first loans of the member, newest first.
func (c *Catalog) Loans(memberID string, first int) []Loan {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Loan
	for _, l := range c.loans {
		if l.MemberID == memberID {
			out = append(out, l)
		}
	}
	slices.Reverse(out)
	return out[:min(len(out), max(first, 0))]
}

// Borrow lends the book to the member.
func (c *Catalog) Borrow(bookID, memberID string) (Loan, error) {
	if _, err := c.Book(bookID); err != nil {
		return Loan{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.loans {
		if l.BookID == bookID && !l.Returned {
			return Loan{}, fmt.Errorf("book %q is out on loan %s: %w", bookID, l.ID, ErrUnavailable)
		}
	}
	c.nextLoan++
	l := Loan{
		ID:       "l" + strconv.Itoa(c.nextLoan),
		MemberID: memberID,
		BookID:   bookID,
		Due:      c.now().Add(LoanPeriod).UTC().Format(time.DateOnly),
	}
	c.loans = append(c.loans, l)
	return l, nil
}

// Return ends the loan.
func (c *Catalog) Return(loanID string) (Loan, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, l := range c.loans {
		if l.ID != loanID {
			continue
		}
		if l.Returned {
			return Loan{}, fmt.Errorf("loan %q already returned: %w", loanID, ErrUnavailable)
		}
		c.loans[i].Returned = true
		return c.loans[i], nil
	}
	return Loan{}, fmt.Errorf("loan %q: %w", loanID, ErrNotFound)
}
