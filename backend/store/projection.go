package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/civicgate/civicgate/backend/records"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Projected reads: the compiled GraphQL read path (backend/readplan) asks for the columns a document selects
// and receives each row's raw values, never a records.Bill. Filters, keyset and cursors are the full-row
// reads' own (billsConditions), so both paths answer the same rows.

// BillField is one field of the GraphQL Bill type a projected read can fetch.
type BillField uint8

// Bill fields, in the order their values reach a RowSink.
const (
	BillID BillField = iota
	BillCongress
	BillType
	BillNumber
	BillOfficialTitle
	BillIntroducedDate
	BillMemberName
	BillMemberBioguideID
	BillMemberByCongressKey
	BillCommitteeNames
	BillSourceURL
	BillLastSyncedAt
	numBillFields
)

// billFieldSQL is each field's select expression (the same renderings as billColumns).
var billFieldSQL = [numBillFields]string{
	"bills.id", "bills.congress", "bills.type", "bills.number", "bills.official_title", date("bills.introduced_date"),
	"bills.member_name", "bills.member_bioguide_id", "bills.member_by_congress_key", "bills.committee_names",
	"bills.source_url", ts("bills.last_synced_at"),
}

// BillFields is a set of BillFields.
type BillFields uint16

// With returns the set with f added.
func (s BillFields) With(f BillField) BillFields { return s | 1<<f }

// Has reports whether f is in the set.
func (s BillFields) Has(f BillField) bool { return s&(1<<f) != 0 }

// Index is f's position among the set's values in a row (f must be in the set).
func (s BillFields) Index(f BillField) int { return bits.OnesCount16(uint16(s) & (1<<f - 1)) }

// Len is the number of fields in the set.
func (s BillFields) Len() int { return bits.OnesCount16(uint16(s)) }

// selectList is the set's select expressions in field order; "" for the empty set.
func (s BillFields) selectList() string {
	var b strings.Builder
	for f := BillField(0); f < numBillFields; f++ {
		if s.Has(f) {
			if b.Len() > 0 {
				b.WriteString(", ")
			}
			b.WriteString(billFieldSQL[f])
		}
	}
	return b.String()
}

// RowSink receives a projected read's rows. The store may run a read twice (a replica, then the primary:
// see Store.read), calling Reset before each attempt.
type RowSink interface {
	// Reset forgets the rows of an earlier attempt.
	Reset()
	// Row receives one row: the values of the requested fields in field order, each in PostgreSQL's text
	// form (integers in decimal, booleans as true or false), nil for NULL. vals and their bytes are valid only during the call.
	Row(vals [][]byte) error
}

// BillsQuery is a validated, projected bills page read, ready to run.
type BillsQuery struct {
	sql     string
	args    []any
	limit   int
	binding string
	fields  BillFields
}

// PrepareBills validates in exactly as Bills does (an *records.InputError for bad text, limit or cursor)
// without touching the database, and builds the page query selecting only fields.
func (s *Store) PrepareBills(in records.BillsInput, fields BillFields) (BillsQuery, error) {
	q, limit, binding, err := s.billsConditions(in)
	if err != nil {
		return BillsQuery{}, err
	}
	// bills.id last, before the sort key: the cursor's two keys end every row.
	cols := fields.selectList()
	if cols != "" {
		cols += ", "
	}
	sql := billsPageSQL(cols+"bills.id AS cursor_id", q, limit)
	return BillsQuery{sql: sql, args: q.params(), limit: limit, binding: binding, fields: fields}, nil
}

// RunBills runs q (on a replica or the primary, as Bills), handing each row of the page to sink, and returns
// the next page's cursor (nil on the final page).
func (s *Store) RunBills(ctx context.Context, q BillsQuery, sink RowSink) (*string, error) {
	var next *string
	err := s.read(ctx, func(db *pgxpool.Pool) error {
		sink.Reset()
		next = nil
		rows, err := db.Query(ctx, q.sql, q.args...)
		if err != nil {
			return fmt.Errorf("store: bills query: %w", err)
		}
		n := q.fields.Len()
		var r rawRows
		var lastID, lastSort []byte
		count := 0
		for rows.Next() {
			if count == q.limit {
				c := s.cursors.Encode(q.binding, []string{string(lastSort), string(lastID)})
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
			lastID = append(lastID[:0], vals[n]...)
			lastSort = append(lastSort[:0], vals[n+1]...)
			count++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: read rows: %w", err)
		}
		return nil
	})
	return next, err
}

// RunBill reads one bill's fields by id (as Bill: an id no bill can have finds nothing without a query),
// handing its row to sink; found is false when the bill is unknown or deleted.
func (s *Store) RunBill(ctx context.Context, id string, fields BillFields, sink RowSink) (found bool, err error) {
	if records.ValidateText(struct {
		ID string `json:"id"`
	}{id}) != nil {
		return false, nil
	}
	cols := fields.selectList()
	if cols == "" {
		cols = "1"
	}
	sql := "SELECT " + cols + " FROM bills WHERE id = $1 AND deleted_at IS NULL"
	err = s.read(ctx, func(db *pgxpool.Pool) error {
		sink.Reset()
		found = false
		rows, err := db.Query(ctx, sql, id)
		if err != nil {
			return fmt.Errorf("store: bill: %w", err)
		}
		defer rows.Close()
		var r rawRows
		if rows.Next() {
			vals, err := r.values(rows)
			if err != nil {
				return err
			}
			if err := sink.Row(vals[:fields.Len()]); err != nil {
				return err
			}
			found = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: bill: %w", err)
		}
		return nil
	})
	return found, err
}

var trueText, falseText = []byte("true"), []byte("false")

// rawRows turns a row's wire values into their text form, reusing its buffers from row to row.
type rawRows struct {
	vals    [][]byte
	scratch []byte
}

func (r *rawRows) values(rows pgx.Rows) ([][]byte, error) {
	raw := rows.RawValues()
	fds := rows.FieldDescriptions()
	r.vals = append(r.vals[:0], raw...)
	r.scratch = r.scratch[:0]
	for i, v := range raw {
		if v == nil || fds[i].Format == pgx.TextFormatCode {
			continue
		}
		switch fds[i].DataTypeOID {
		case pgtype.TextOID, pgtype.VarcharOID:
			// binary text is the text
		case pgtype.JSONBOID: // a version byte, then the JSON text
			if len(v) == 0 || v[0] != 1 {
				return nil, fmt.Errorf("store: jsonb column %q of an unknown version", fds[i].Name)
			}
			r.vals[i] = v[1:]
		case pgtype.BoolOID:
			if len(v) != 1 {
				return nil, fmt.Errorf("store: bool column %q of %d bytes", fds[i].Name, len(v))
			}
			if v[0] != 0 {
				r.vals[i] = trueText
			} else {
				r.vals[i] = falseText
			}
		case pgtype.Int4OID:
			if len(v) != 4 {
				return nil, fmt.Errorf("store: int4 column %q of %d bytes", fds[i].Name, len(v))
			}
			start := len(r.scratch)
			r.scratch = strconv.AppendInt(r.scratch, int64(int32(binary.BigEndian.Uint32(v))), 10)
			r.vals[i] = r.scratch[start:len(r.scratch):len(r.scratch)]
		default:
			return nil, fmt.Errorf("store: column %q has binary type OID %d", fds[i].Name, fds[i].DataTypeOID)
		}
	}
	return r.vals, nil
}
