package mirror

import (
	"context"
	"io"
)

// DefaultBatchSize is how many records of a file import go into one transaction: per-transaction costs
// (event lock, snapshot lookups, staging, commit) dominate small chunks (docs/design.md D30).
const DefaultBatchSize = 5000

// ItemsSource serves already-read items (a parsed file) in chunks of BatchSize.
type ItemsSource struct {
	Fam       Family
	Src       string
	Items     []Item
	BatchSize int
	// ScopePrefix, when set, limits --full-snapshot deletion to records whose id starts with it (Scoped).
	ScopePrefix string
	next        int
}

// Scope implements Scoped.
func (s *ItemsSource) Scope() string { return s.ScopePrefix }

// Family implements Source.
func (s *ItemsSource) Family() Family { return s.Fam }

// Name implements Source.
func (s *ItemsSource) Name() string { return s.Src }

// Next implements Source.
func (s *ItemsSource) Next(ctx context.Context) (Chunk, error) {
	if err := ctx.Err(); err != nil {
		return Chunk{}, err
	}
	if s.next >= len(s.Items) {
		return Chunk{}, io.EOF
	}
	n := s.BatchSize
	if n <= 0 {
		n = DefaultBatchSize
	}
	end := min(s.next+n, len(s.Items))
	ch := Chunk{Items: s.Items[s.next:end]}
	s.next = end
	return ch, nil
}
