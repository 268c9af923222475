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
	p, limit, binding, err := s.budgetsConditions(in)
	if err != nil {
		return records.FederalBudgetsPage{}, err
	}
	sql := p.pageSQL(budgetColumns, limit) // before reading args: it adds arguments
	return queryPage(ctx, s, "budgets", sql, p.q.params(), limit, binding, func(r pgx.Rows) (records.FederalBudgetLine, []string, error) {
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

// budgetsPage is a budget page's conditions and keyset predicate (q, on unqualified federal_budget_lines
// columns) and its agency substring: the one filter implementation both the full-row read (FederalBudgets) and
// the projected read (PrepareBudgets) use.
type budgetsPage struct {
	q       *query
	dataset string
	agency  *string
}

// budgetsConditions validates in and builds the filters and keyset predicate of a budgets page.
func (s *Store) budgetsConditions(in records.FederalBudgetsInput) (p budgetsPage, limit int, binding string, err error) {
	if err := records.ValidateText(in); err != nil {
		return budgetsPage{}, 0, "", err
	}
	if err := records.ValidateBudgets(in); err != nil {
		return budgetsPage{}, 0, "", err
	}
	binding = bindingOf(budgetsKeyset.family, budgetsFilter{in.Dataset, in.Congress, in.FiscalYear, in.Month, in.Agency, in.BureauCode, in.Account, in.Edition})
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
	if in.BureauCode != nil {
		q.cond("bureau_code = %s", *in.BureauCode)
	}
	if in.Account != nil {
		q.cond("account_title ILIKE %s", likePattern(*in.Account))
	}
	if in.Edition != nil {
		q.cond("edition = %s", *in.Edition)
	}
	limit, err = s.page(q, budgetsKeyset, binding, records.Paging{Cursor: in.Cursor, Limit: in.Limit})
	if err != nil {
		return budgetsPage{}, 0, "", err
	}
	return budgetsPage{q: q, dataset: in.Dataset, agency: in.Agency}, limit, binding, nil
}

// pageSQL is the page query selecting columns under the page's conditions; it adds arguments to p.q.
func (p budgetsPage) pageSQL(columns string, limit int) string {
	if p.agency != nil {
		return budgetsByAgencySQL(columns, p.q, p.dataset, *p.agency, limit)
	}
	return "SELECT " + columns + " FROM federal_budget_lines" + p.q.whereSQL() +
		" ORDER BY federal_budget_lines.fiscal_year DESC, federal_budget_lines.sort_month DESC, federal_budget_lines.id DESC LIMIT " + limitSQL(limit)
}

// budgetAgencyProbes is how many matching agency names are read one ordered range each; a substring matching
// more names matches densely enough that walking the order index finds a page sooner.
const budgetAgencyProbes = 16

// budgetsByAgencySQL is the page query for an agency substring (docs/design.md, ordered plans for the slow
// filters): the substring is matched against the dataset's agency names (budget_agency_names, migration 0105);
// with at most budgetAgencyProbes of them, each name's newest limit+1 lines come from its budget_agency_idx range
// and the page is the newest of those; with more, the order index is walked with the ILIKE filter as before.
// q holds every other condition (and the keyset predicate), all on unqualified federal_budget_lines columns;
// columns is the select list.
func budgetsByAgencySQL(columns string, q *query, dataset, agency string, limit int) string {
	pattern, lim := q.arg(likePattern(agency)), limitSQL(limit)
	where := q.whereSQL()
	order := " ORDER BY fiscal_year DESC, sort_month DESC, id DESC LIMIT " + lim
	return "WITH names AS MATERIALIZED (SELECT agency_name FROM budget_agency_names WHERE dataset = " + q.arg(dataset) +
		" AND agency_name ILIKE " + pattern + ")" +
		" SELECT " + columns + " FROM federal_budget_lines WHERE id IN (" +
		"SELECT x.id FROM names n CROSS JOIN LATERAL (SELECT id FROM federal_budget_lines" + where +
		" AND agency_name = n.agency_name" + order + ") x" +
		" WHERE (SELECT count(*) FROM names) <= " + strconv.Itoa(budgetAgencyProbes) +
		" UNION ALL (SELECT id FROM federal_budget_lines" + where + " AND agency_name ILIKE " + pattern +
		" AND (SELECT count(*) FROM names) > " + strconv.Itoa(budgetAgencyProbes) + order + "))" + order
}
