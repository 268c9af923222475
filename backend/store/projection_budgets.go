package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/civicgate/civicgate/backend/records"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Projected budget reads (see projection.go): the selected FederalBudgetLine columns of a page, under the
// filters and keyset of FederalBudgets (budgetsConditions).

// BudgetField is one field of the GraphQL FederalBudgetLine type.
type BudgetField uint8

// FederalBudgetLine fields, in the order their values reach a RowSink.
const (
	BudgetID BudgetField = iota
	BudgetDataset
	BudgetFiscalYear
	BudgetCongress
	BudgetMonth
	BudgetRecordDate
	BudgetAgencyCode
	BudgetAgencyName
	BudgetBureauCode
	BudgetBureauName
	BudgetAccountCode
	BudgetAccountTitle
	BudgetSubfunctionCode
	BudgetSubfunctionTitle
	BudgetBeaCategory
	BudgetOnOffBudget
	BudgetAmount
	BudgetFiscalYearToDateAmount
	BudgetSourceURL
	BudgetEdition
	BudgetEstimate
	BudgetTransitionQuarter
	BudgetLastSyncedAt
)

// budgetFieldSQL is each field's select expression: budgetColumns' renderings, amounts as their exact decimal
// text (the reader converts them as pgx does).
var budgetFieldSQL = []string{"id", "dataset", "fiscal_year", "congress", "month", date("record_date"), "agency_code",
	"agency_name", "bureau_code", "bureau_name", "account_code", "account_title", "subfunction_code",
	"subfunction_title", "bea_category", "on_off_budget", "amount::text", "fiscal_year_to_date_amount::text",
	"source_url", "edition", "estimate", "transition_quarter", ts("last_synced_at")}

// BudgetFields is the columns a projected budgets read selects.
type BudgetFields = FieldSet[BudgetField]

// ErrUnscannable is a projected read's error for a row holding a value the family's full-row read cannot scan
// (a NULL array element, agencies that are not a list): the full-row read fails on such a page
// whichever fields a document selects, so the projected one does not answer it either.
var ErrUnscannable = errors.New("store: a row the full-row read cannot scan")

// PageQuery is a validated, projected page read, ready to run: its rows end with the cursor's keys, then the
// values check reads.
type PageQuery struct {
	what    string
	sql     string
	args    []any
	limit   int
	binding string
	width   int // the selected values of a row, before the cursor's keys
	keys    int
	// check reports ErrUnscannable for a row whose check values (the row's last ones) the full-row read cannot
	// scan; nil: every row scans.
	check func(vals [][]byte) error
}

// checkFlag reports ErrUnscannable for a row whose first check value is true.
func checkFlag(vals [][]byte) error {
	if string(vals[0]) == "true" {
		return ErrUnscannable
	}
	return nil
}

// PrepareBudgets validates in exactly as FederalBudgets does (an *records.InputError for bad text, dataset
// members, limit or cursor) without touching the database, and builds the page query selecting only fields.
func (s *Store) PrepareBudgets(in records.FederalBudgetsInput, fields BudgetFields) (PageQuery, error) {
	p, limit, binding, err := s.budgetsConditions(in)
	if err != nil {
		return PageQuery{}, err
	}
	cols := fields.selectList(budgetFieldSQL)
	if cols != "" {
		cols += ", "
	}
	// Every line scans: a NaN amount is gqlgen's to refuse only when selected (readplan hands those back).
	sql := p.pageSQL(cols+"fiscal_year AS cursor_fiscal_year, sort_month AS cursor_sort_month, id AS cursor_id", limit)
	return PageQuery{what: "budgets", sql: sql, args: p.q.params(), limit: limit, binding: binding, width: fields.Len(), keys: 3}, nil
}

// RunPage runs q (on a replica or the primary, as the family's full-row read), handing each row of the page to
// sink, and returns the next page's cursor (nil on the final page).
func (s *Store) RunPage(ctx context.Context, q PageQuery, sink RowSink) (*string, error) {
	var next *string
	err := s.read(ctx, func(db *pgxpool.Pool) error {
		sink.Reset()
		next = nil
		rows, err := db.Query(ctx, q.sql, q.args...)
		if err != nil {
			return fmt.Errorf("store: %s query: %w", q.what, err)
		}
		defer rows.Close()
		var r rawRows
		last := make([]string, q.keys)
		count := 0
		for rows.Next() {
			if count == q.limit {
				c := s.cursors.Encode(q.binding, last)
				next = &c
				break
			}
			vals, err := r.values(rows)
			if err != nil {
				return err
			}
			if q.check != nil {
				if err := q.check(vals[q.width+q.keys:]); err != nil {
					return err
				}
			}
			if err := sink.Row(vals[:q.width]); err != nil {
				return err
			}
			for i := range last {
				last[i] = string(vals[q.width+i])
			}
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
