// Package pager is the page-number walk shared by the JSON API importers (Federal Register, Senate LDA,
// Fiscal Data MTS): it fetches page after page of an upstream list endpoint, turns every result into an
// item with a position, and exposes the next page number as the resume cursor.
package pager

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"

	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/backend/mirror/fetch"
)

// Page is one decoded upstream page.
type Page struct {
	Items []mirror.Item
	More  bool // another page follows
}

// Source walks pages: it sets PageParam (and SizeParam=Size, when set) on BaseURL's query.
type Source struct {
	Fam                  mirror.Family
	Src                  string
	Client               *fetch.Client
	BaseURL              string
	PageParam, SizeParam string
	Size                 int
	// Decode turns a page body into items; page is the 1-based page number (for positions).
	Decode func(body []byte, page int) (Page, error)
	page   int
	done   bool
}

// New starts at cursor (a page number; "" = 1).
func New(s Source, cursor string) (*Source, error) {
	s.page = 1
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("pager: bad cursor %q", cursor)
		}
		s.page = n
	}
	if _, err := url.Parse(s.BaseURL); err != nil {
		return nil, fmt.Errorf("pager: bad url: %w", err)
	}
	return &s, nil
}

// Family implements mirror.Source.
func (s *Source) Family() mirror.Family { return s.Fam }

// Name implements mirror.Source.
func (s *Source) Name() string { return s.Src }

// Next implements mirror.Source.
func (s *Source) Next(ctx context.Context) (mirror.Chunk, error) {
	if s.done {
		return mirror.Chunk{}, io.EOF
	}
	u, _ := url.Parse(s.BaseURL)
	q := u.Query()
	q.Set(s.PageParam, strconv.Itoa(s.page))
	if s.SizeParam != "" && s.Size > 0 {
		q.Set(s.SizeParam, strconv.Itoa(s.Size))
	}
	u.RawQuery = q.Encode()
	body, err := s.Client.Get(ctx, u.String())
	if err != nil {
		return mirror.Chunk{}, err
	}
	p, err := s.Decode(body, s.page)
	if err != nil {
		return mirror.Chunk{}, fmt.Errorf("page %d: %w", s.page, err)
	}
	if len(p.Items) == 0 {
		return mirror.Chunk{}, io.EOF
	}
	s.page++
	if !p.More {
		s.done = true
	}
	return mirror.Chunk{Items: p.Items, Cursor: strconv.Itoa(s.page)}, nil
}

// DecodeItems turns each raw result of page into an item: decoded into T
// (numbers kept as json.Number) and normalized. A result that fails either
// step becomes an item with its position ("results[i] of page p") and error,
// so one malformed record never hides the rest of the page.
func DecodeItems[T any, R mirror.Record](results []json.RawMessage, page int, normalize func(*T) (R, error)) []mirror.Item {
	items := make([]mirror.Item, 0, len(results))
	for i, raw := range results {
		pos := fmt.Sprintf("results[%d] of page %d", i, page)
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v T
		if err := dec.Decode(&v); err != nil {
			items = append(items, mirror.Item{Pos: pos, Err: err})
			continue
		}
		rec, err := normalize(&v)
		if err != nil {
			items = append(items, mirror.Item{Pos: pos, Err: err})
			continue
		}
		items = append(items, mirror.Item{Pos: pos, Rec: rec})
	}
	return items
}
