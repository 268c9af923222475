// Package omb imports APPROPRIATIONS budget lines from the OMB Public Budget Database budget-authority CSV
// (one row per account line, one column per fiscal year, thousands of dollars).
package omb

import (
	"encoding/csv"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/backend/records"
)

// SourceName identifies this source in sync_state and snapshots.
const SourceName = "omb"

// SourceURL is recorded on every line.
const SourceURL = "https://www.whitehouse.gov/omb/budget/historical-tables/"

// column name variants seen in the published files (matched case-insensitively, spaces collapsed).
var columns = map[string][]string{
	"agency_code":       {"agency code"},
	"agency_name":       {"agency name"},
	"bureau_code":       {"bureau code"},
	"bureau_name":       {"bureau name"},
	"account_code":      {"account code"},
	"account_title":     {"account name", "account title"},
	"treasury_agency":   {"treasury agency code"},
	"subfunction_code":  {"subfunction code"},
	"subfunction_title": {"subfunction title", "subfunction name"},
	"bea_category":      {"bea category"},
	"grant_split":       {"grant/non-grant split"},
	"on_off_budget":     {"on- or off- budget", "on- or off-budget", "on-/off-budget", "on or off budget"},
}

// Options filter the fiscal-year columns imported (0 = no bound).
type Options struct {
	FromYear, ToYear int
}

// Parse reads the CSV. Every (row, fiscal-year cell with a value) becomes one line; a row's items share
// its position ("line N"). Cells that are empty or "." are absent values, not zero.
func Parse(r io.Reader, opt Options) ([]mirror.Item, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("omb: header: %w", err)
	}
	col := map[string]int{}
	years := map[int]int{} // column → fiscal year
	for i, h := range header {
		h = strings.ToLower(strings.Join(strings.Fields(strings.TrimPrefix(h, "\ufeff")), " "))
		for k, names := range columns {
			for _, n := range names {
				if h == n {
					col[k] = i
				}
			}
		}
		if y, err := strconv.Atoi(h); err == nil && y >= 1900 && y < 2200 {
			if (opt.FromYear == 0 || y >= opt.FromYear) && (opt.ToYear == 0 || y <= opt.ToYear) {
				years[i] = y
			}
		}
	}
	for _, k := range []string{"agency_code", "agency_name", "account_code", "account_title"} {
		if _, ok := col[k]; !ok {
			return nil, fmt.Errorf("omb: header has no %q column", columns[k][0])
		}
	}
	if len(years) == 0 {
		return nil, errors.New("omb: header has no fiscal-year columns")
	}
	var items []mirror.Item
	index := map[string]int{} // id → position in items (duplicate descriptive rows are summed)
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := cr.FieldPos(0)
		pos := fmt.Sprintf("line %d", line)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				items = append(items, mirror.Item{Pos: fmt.Sprintf("line %d", pe.Line), Err: err})
				continue
			}
			return nil, fmt.Errorf("omb: %w", err)
		}
		lines, err := row(rec, col, years)
		if err != nil {
			items = append(items, mirror.Item{Pos: pos, Err: err})
			continue
		}
		for _, l := range lines {
			if k, dup := index[l.ID]; dup {
				prev := items[k].Rec.(*mirror.BudgetLine)
				prev.Amount = math.Round((prev.Amount+l.Amount)*100) / 100
				continue
			}
			index[l.ID] = len(items)
			items = append(items, mirror.Item{Pos: pos, Rec: l})
		}
	}
	return items, nil
}

func row(rec []string, col map[string]int, years map[int]int) ([]*mirror.BudgetLine, error) {
	get := func(k string) string {
		i, ok := col[k]
		if !ok || i >= len(rec) {
			return ""
		}
		return strings.TrimSpace(rec[i])
	}
	opt := func(k string) *string {
		if v := get(k); v != "" {
			return &v
		}
		return nil
	}
	agencyCode, agencyName, accountCode, title := get("agency_code"), get("agency_name"), get("account_code"), get("account_title")
	if agencyName == "" || title == "" {
		return nil, errors.New("agency name or account name is empty")
	}
	if !digits(agencyCode) || !digits(accountCode) {
		return nil, fmt.Errorf("agency code %q / account code %q are not numeric codes", agencyCode, accountCode)
	}
	h := fnv.New32a()
	for _, k := range []string{"agency_code", "bureau_code", "account_code", "treasury_agency", "subfunction_code", "bea_category", "grant_split", "on_off_budget"} {
		_, _ = io.WriteString(h, get(k)+"\x00")
	}
	var out []*mirror.BudgetLine
	for i, fy := range years {
		if i >= len(rec) {
			continue
		}
		v := strings.ReplaceAll(strings.TrimSpace(rec[i]), ",", "")
		if v == "" || v == "." || v == "-" {
			continue
		}
		thousands, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("fiscal year %d amount %q: %w", fy, v, err)
		}
		l := &mirror.BudgetLine{FederalBudgetLine: records.FederalBudgetLine{
			ID:      fmt.Sprintf("appr-%d-%s-%s-%s-%08x", fy, agencyCode, get("bureau_code"), accountCode, h.Sum32()),
			Dataset: "APPROPRIATIONS", FiscalYear: fy, Congress: CongressForFiscalYear(fy),
			AgencyCode: &agencyCode, AgencyName: agencyName, BureauCode: opt("bureau_code"), BureauName: opt("bureau_name"),
			AccountCode: &accountCode, AccountTitle: title, SubfunctionCode: opt("subfunction_code"),
			SubfunctionTitle: opt("subfunction_title"), BeaCategory: opt("bea_category"), OnOffBudget: opt("on_off_budget"),
			Amount: math.Round(thousands*1000*100) / 100,
		}}
		src := SourceURL
		l.SourceURL = &src
		out = append(out, l)
	}
	// Map iteration order is random: keep a row's years in order for stable positions.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].FiscalYear < out[j-1].FiscalYear; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out, nil
}

// CongressForFiscalYear is the Congress in session on Oct 1 of FY−1: floor((FY−1788)/2).
func CongressForFiscalYear(fy int) int { return (fy - 1788) / 2 }

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
