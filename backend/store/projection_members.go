package store

import (
	"context"
	"fmt"
	"math/bits"
	"strings"

	"github.com/civicgate/civicgate/backend/records"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Projected members reads (see projection.go): the page's selected Member columns, then — only when the
// document selects terms — the selected MemberTerm columns of the page's members in one more query, on the same
// server and in the same order as Members (loadTerms).

// FieldSet is a set of one type's fields (a MemberField or a TermField), numbered from 0 in select order.
type FieldSet[F ~uint8] uint32

// With returns the set with f added.
func (s FieldSet[F]) With(f F) FieldSet[F] { return s | 1<<f }

// Has reports whether f is in the set.
func (s FieldSet[F]) Has(f F) bool { return s&(1<<f) != 0 }

// Index is f's position among the set's values in a row (f must be in the set).
func (s FieldSet[F]) Index(f F) int { return bits.OnesCount32(uint32(s) & (1<<f - 1)) }

// Len is the number of fields in the set.
func (s FieldSet[F]) Len() int { return bits.OnesCount32(uint32(s)) }

// selectList is the set's expressions from sql in field order; "" for the empty set.
func (s FieldSet[F]) selectList(sql []string) string {
	var b strings.Builder
	for i, expr := range sql {
		if s.Has(F(i)) {
			if b.Len() > 0 {
				b.WriteString(", ")
			}
			b.WriteString(expr)
		}
	}
	return b.String()
}

// MemberField is one scalar field of the GraphQL Member type.
type MemberField uint8

// Member fields, in the order their values reach a RowSink.
const (
	MemberID MemberField = iota
	MemberBioguideID
	MemberName
	MemberState
)

var memberFieldSQL = []string{"m.member_id", "m.bioguide_id", "m.name", "m.state"}

// TermField is one field of the GraphQL MemberTerm type.
type TermField uint8

// MemberTerm fields, in the order their values reach a TermSink.
const (
	TermCongress TermField = iota
	TermChamber
	TermParty
)

var termFieldSQL = []string{"congress", "chamber", "party"}

// MemberFields and TermFields are the columns a projected members read selects.
type (
	MemberFields = FieldSet[MemberField]
	TermFields   = FieldSet[TermField]
)

// TermSink receives the terms of a projected members page: each with the index of its member among the page's
// rows, every member's terms together and in Members' order.
type TermSink interface {
	Reset()
	Term(member int, vals [][]byte) error
}

// MembersQuery is a validated, projected members page read, ready to run.
type MembersQuery struct {
	sql       string
	args      []any
	limit     int
	binding   string
	fields    MemberFields
	terms     bool
	termsSQL  string
	termWidth int
}

// PrepareMembers validates in exactly as Members does (an *records.InputError for bad text, chamber, limit or
// cursor) without touching the database, and builds the page query selecting only fields; withTerms reads the
// terms' termFields too.
func (s *Store) PrepareMembers(in records.MembersInput, fields MemberFields, withTerms bool, termFields TermFields) (MembersQuery, error) {
	p, limit, binding, err := s.membersConditions(in)
	if err != nil {
		return MembersQuery{}, err
	}
	// The cursor's two keys end every row (the name, then the id the terms are read by).
	cols := fields.selectList(memberFieldSQL)
	if cols != "" {
		cols += ", "
	}
	sql := p.pageSQL(cols+"m.name AS cursor_name, m.member_id AS cursor_id", limit)
	q := MembersQuery{sql: sql, args: p.args.params(), limit: limit, binding: binding, fields: fields, terms: withTerms}
	if withTerms {
		tcols := termFields.selectList(termFieldSQL)
		if tcols != "" {
			tcols = ", " + tcols
		}
		q.termsSQL = "SELECT member_id" + tcols + " FROM member_terms WHERE member_id = ANY($1) ORDER BY member_id, congress, chamber, seq"
		q.termWidth = termFields.Len()
	}
	return q, nil
}

// RunMembers runs q (on a replica or the primary, as Members, the page and its terms from one server), handing
// each member's row to sink and each term to terms, and returns the next page's cursor (nil on the final page).
func (s *Store) RunMembers(ctx context.Context, q MembersQuery, sink RowSink, terms TermSink) (*string, error) {
	var next *string
	err := s.read(ctx, func(db *pgxpool.Pool) error {
		sink.Reset()
		next = nil
		rows, err := db.Query(ctx, q.sql, q.args...)
		if err != nil {
			return fmt.Errorf("store: members query: %w", err)
		}
		n := q.fields.Len()
		var r rawRows
		var ids []string
		var lastName []byte
		for rows.Next() {
			if len(ids) == q.limit {
				c := s.cursors.Encode(q.binding, []string{string(lastName), ids[len(ids)-1]})
				next = &c
				break
			}
			vals, err := r.values(rows)
			if err != nil {
				rows.Close()
				return err
			}
			if err := sink.Row(vals[:n]); err != nil {
				rows.Close()
				return err
			}
			lastName = append(lastName[:0], vals[n]...)
			ids = append(ids, string(vals[n+1]))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: read rows: %w", err)
		}
		if !q.terms {
			return nil
		}
		terms.Reset()
		if len(ids) == 0 {
			return nil
		}
		return readTerms(ctx, db, q, ids, terms)
	})
	return next, err
}

// readTerms hands the terms of the members ids (a page's, in page order) to sink.
func readTerms(ctx context.Context, db *pgxpool.Pool, q MembersQuery, ids []string, sink TermSink) error {
	index := make(map[string]int, len(ids))
	for i, id := range ids {
		index[id] = i
	}
	rows, err := db.Query(ctx, q.termsSQL, ids)
	if err != nil {
		return fmt.Errorf("store: member terms query: %w", err)
	}
	defer rows.Close()
	var r rawRows
	for rows.Next() {
		vals, err := r.values(rows)
		if err != nil {
			return err
		}
		i, ok := index[string(vals[0])]
		if !ok {
			return fmt.Errorf("store: member terms: a term of a member not on the page")
		}
		if err := sink.Term(i, vals[1:1+q.termWidth]); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: read member terms: %w", err)
	}
	return nil
}
