package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/civicgate/civicgate/backend/records"
	"github.com/jackc/pgx/v5"
)

var budgetsKeyset = keyset{family: "federal_budgets", cols: "(fiscal_year, sort_month, id)", casts: []string{"integer", "text", "text"}, op: "<"}

type budgetsFilter struct {
	Dataset    string  `json:"ds"`
	Congress   *int    `json:"c,omitempty"`
	FiscalYear *int    `json:"fy,omitempty"`
	Month      *string `json:"m,omitempty"`
	Agency     *string `json:"a,omitempty"`
	BureauCode *string `json:"b,omitempty"`
	Account    *string `json:"ac,omitempty"`
	Edition    *int    `json:"e,omitempty"`
}

var budgetColumns = `id, dataset, fiscal_year, congress, month, ` + date("record_date") + `, agency_code, agency_name,
	bureau_code, bureau_name, account_code, account_title, subfunction_code, subfunction_title, bea_category,
	on_off_budget, amount, fiscal_year_to_date_amount, source_url, edition, estimate, transition_quarter,
	` + ts("last_synced_at") + `, sort_month`

// FederalBudgets returns one page of budget lines of one dataset, newest fiscal year, then month, first.
func (s *Store) FederalBudgets(ctx context.Context, in records.FederalBudgetsInput) (records.FederalBudgetsPage, error) {
	if err := records.ValidateText(in); err != nil {
		return records.FederalBudgetsPage{}, err
	}
	if err := records.ValidateBudgets(in); err != nil {
		return records.FederalBudgetsPage{}, err
	}
	binding := bindingOf(budgetsKeyset.family, budgetsFilter{in.Dataset, in.Congress, in.FiscalYear, in.Month, in.Agency, in.BureauCode, in.Account, in.Edition})
	q := &query{where: []string{"deleted_at IS NULL"}}
	q.cond("dataset = %s", in.Dataset)
	if in.Congress != nil {
		q.cond("congress = %s", *in.Congress)
	}
	if in.FiscalYear != nil {
		q.cond("fiscal_year = %s", *in.FiscalYear)
	}
	if in.Month != nil {
		q.cond("month = %s", *in.Month)
	}
	if in.Agency != nil {
		q.cond("agency_name ILIKE %s", likePattern(*in.Agency))
	}
	if in.BureauCode != nil {
		q.cond("bureau_code = %s", *in.BureauCode)
	}
	if in.Account != nil {
		q.cond("account_title ILIKE %s", likePattern(*in.Account))
	}
	if in.Edition != nil {
		q.cond("edition = %s", *in.Edition)
	}
	limit, err := s.page(q, budgetsKeyset, binding, records.Paging{Cursor: in.Cursor, Limit: in.Limit})
	if err != nil {
		return records.FederalBudgetsPage{}, err
	}
	sql := "SELECT " + budgetColumns + " FROM federal_budget_lines" + q.whereSQL() +
		" ORDER BY federal_budget_lines.fiscal_year DESC, federal_budget_lines.sort_month DESC, federal_budget_lines.id DESC LIMIT " + q.arg(limit+1)
	return queryPage(ctx, s, "budgets", sql, q.args, limit, binding, func(r pgx.Rows) (records.FederalBudgetLine, []string, error) {
		var l records.FederalBudgetLine
		var sortMonth string
		err := r.Scan(&l.ID, &l.Dataset, &l.FiscalYear, &l.Congress, &l.Month, &l.RecordDate, &l.AgencyCode,
			&l.AgencyName, &l.BureauCode, &l.BureauName, &l.AccountCode, &l.AccountTitle, &l.SubfunctionCode,
			&l.SubfunctionTitle, &l.BeaCategory, &l.OnOffBudget, &l.Amount, &l.FiscalYearToDateAmount,
			&l.SourceURL, &l.Edition, &l.Estimate, &l.TransitionQuarter, &l.LastSyncedAt, &sortMonth)
		if err != nil {
			return l, nil, fmt.Errorf("store: scan budget line: %w", err)
		}
		return l, []string{strconv.Itoa(l.FiscalYear), sortMonth, l.ID}, nil
	})
}
