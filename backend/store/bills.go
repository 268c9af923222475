package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/civicgate/civicgate/backend/records"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var billsKeyset = keyset{family: "bills", cols: "(sort_date, id)", casts: []string{"date", "text"}, op: "<"}

var billColumns = `id, congress, type, number, official_title, ` + date("introduced_date") + `,
	member_name, member_bioguide_id, member_by_congress_key, committee_names, source_url, ` + ts("last_synced_at")

func scanBill(row pgx.Row, b *records.Bill, extra ...any) error {
	dst := append([]any{&b.ID, &b.Congress, &b.Type, &b.Number, &b.OfficialTitle, &b.IntroducedDate,
		&b.MemberName, &b.MemberBioguideID, &b.MemberByCongressKey, &b.CommitteeNames, &b.SourceURL, &b.LastSyncedAt}, extra...)
	return row.Scan(dst...)
}

// billsFilter is the normalised filter set a bills cursor is bound to.
type billsFilter struct {
	Congress *int    `json:"c,omitempty"`
	Type     *string `json:"t,omitempty"`
	Q        *string `json:"q,omitempty"`
}

// Bills returns one page of bills, newest introduced first (NULL dates last), then id descending.
func (s *Store) Bills(ctx context.Context, in records.BillsInput) (records.BillsPage, error) {
	sql, args, limit, binding, err := s.billsQuery(in)
	if err != nil {
		return records.BillsPage{}, err
	}
	return queryPage(ctx, s, "bills", sql, args, limit, binding, func(r pgx.Rows) (records.Bill, []string, error) {
		var b records.Bill
		var sortDate string
		if err := scanBill(r, &b, &sortDate); err != nil {
			return b, nil, fmt.Errorf("store: scan bill: %w", err)
		}
		return b, []string{sortDate, b.ID}, nil
	})
}

// billsQuery validates in and builds the page query (split out so tests can EXPLAIN it).
func (s *Store) billsQuery(in records.BillsInput) (sql string, args []any, limit int, binding string, err error) {
	q, limit, binding, err := s.billsConditions(in)
	if err != nil {
		return "", nil, 0, "", err
	}
	sql = billsPageSQL(billColumns, q, limit) // before reading q.args: it adds the LIMIT argument
	return sql, q.params(), limit, binding, nil
}

// billsConditions validates in and builds the filters and keyset predicate of a bills page: the one
// implementation both the full-row read (Bills) and the projected read (PrepareBills) use.
func (s *Store) billsConditions(in records.BillsInput) (q *query, limit int, binding string, err error) {
	if err := records.ValidateText(in); err != nil {
		return nil, 0, "", err
	}
	if in.Type != nil { // stored lowercase (docs/design.md D3, D32): "HR" is hr, and shares its cursors
		t := strings.ToLower(*in.Type)
		in.Type = &t
	}
	binding = billsBinding(billsFilter{Congress: in.Congress, Type: in.Type, Q: in.Q})
	q = &query{where: []string{"deleted_at IS NULL"}}
	if in.Congress != nil {
		q.cond("congress = %s", *in.Congress)
	}
	if in.Type != nil {
		q.cond("type = %s", *in.Type)
	}
	if in.Q != nil {
		q.cond("search @@ websearch_to_tsquery('english', %s)", records.NormalizeSearch(*in.Q))
	}
	limit, err = s.page(q, billsKeyset, binding, records.Paging{Cursor: in.Cursor, Limit: in.Limit})
	if err != nil {
		return nil, 0, "", err
	}
	return q, limit, binding, nil
}

// billsPageSQL is the page query selecting columns (then the cursor's sort key) under q's conditions; it adds
// the LIMIT argument to q.
func billsPageSQL(columns string, q *query, limit int) string {
	// The cursor key gets its own alias: a bare "sort_date" in ORDER BY would otherwise bind to the text
	// output column and sort without the index.
	return "SELECT " + columns + ", bills.sort_date::text AS cursor_sort_date FROM bills" + q.whereSQL() +
		" ORDER BY bills.sort_date DESC, bills.id DESC LIMIT " + limitSQL(limit)
}

func billsBinding(f billsFilter) string { return bindingOf(billsKeyset.family, f) }

// Bill returns one bill by id, or nil when it is unknown or deleted.
func (s *Store) Bill(ctx context.Context, id string) (*records.Bill, error) {
	if records.ValidateText(struct {
		ID string `json:"id"`
	}{id}) != nil {
		return nil, nil // no bill has such an id
	}
	var b *records.Bill
	err := s.read(ctx, func(db *pgxpool.Pool) error {
		b = &records.Bill{}
		err := scanBill(db.QueryRow(ctx, "SELECT "+billColumns+" FROM bills WHERE id = $1 AND deleted_at IS NULL", id), b)
		if errors.Is(err, pgx.ErrNoRows) {
			b = nil
			return nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: bill: %w", err)
	}
	return b, nil
}
