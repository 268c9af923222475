// Package omb imports APPROPRIATIONS budget lines from the OMB Public Budget Database budget-authority CSV
// (one row per account line, one column per fiscal year, thousands of dollars), as OMB releases it: CRLF,
// amounts quoted with thousands separators ("1,000"), a TQ column (the 1976 transition quarter), "Receipts, …"
// rows without an account code, and accounts that share codes under different names (docs/design.md D29).
package omb

import (
	"encoding/csv"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/backend/records"
)

// SourceName identifies this source in sync_state and snapshots.
const SourceName = "omb"

// SourceURL is recorded on every line.
const SourceURL = "https://www.whitehouse.gov/omb/budget/historical-tables/"

// OutYears is how many fiscal years a release carries after its budget year: the FY2016 release's last
// column is 2020, so a file's edition is its last fiscal-year column minus OutYears.
const OutYears = 4

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

// identity is what makes two rows the same account line: every descriptive column that is not derived
// from another one, the account name included (accounts sharing codes under two names are two lines).
var identity = []string{"agency_code", "bureau_code", "account_code", "account_title", "treasury_agency",
	"subfunction_code", "bea_category", "grant_split", "on_off_budget"}

// Options filter the fiscal-year columns imported (0 = no bound) and may name the edition.
type Options struct {
	FromYear, ToYear int
	// Edition is the budget year of the release; 0 = the last fiscal-year column minus OutYears.
	Edition int
}

// yearColumn is one amount column: a fiscal year, or the transition quarter (fiscal_year 1976, tq).
type yearColumn struct {
	index int
	fy    int
	tq    bool
}

// Scope is the record-id prefix of one edition's lines: a --full-snapshot import of an edition only marks
// lines of that edition deleted.
func Scope(edition int) string { return fmt.Sprintf("appr-e%d-", edition) }

// header is the header row: the descriptive columns by name and the amount columns in file order.
type header struct {
	col     map[string]int
	years   []yearColumn
	Edition int
}

func readHeader(names []string, opt Options) (*header, error) {
	h := &header{col: map[string]int{}}
	last := 0
	for i, name := range names {
		name = strings.ToLower(strings.Join(strings.Fields(strings.TrimPrefix(name, "\ufeff")), " "))
		for k, names := range columns {
			for _, n := range names {
				if name == n {
					h.col[k] = i
				}
			}
		}
		fy, tq := 0, false
		if name == "tq" {
			fy, tq = 1976, true
		} else if y, err := strconv.Atoi(name); err == nil && y >= 1900 && y < 2200 {
			fy = y
			last = max(last, y)
		}
		if fy != 0 && (opt.FromYear == 0 || fy >= opt.FromYear) && (opt.ToYear == 0 || fy <= opt.ToYear) {
			h.years = append(h.years, yearColumn{index: i, fy: fy, tq: tq})
		}
	}
	for _, k := range []string{"agency_code", "agency_name", "account_code", "account_title"} {
		if _, ok := h.col[k]; !ok {
			return nil, fmt.Errorf("omb: header has no %q column", columns[k][0])
		}
	}
	if last == 0 {
		return nil, errors.New("omb: header has no fiscal-year columns")
	}
	h.Edition = opt.Edition
	if h.Edition == 0 {
		h.Edition = last - OutYears
	}
	return h, nil
}

// Parse reads the CSV. Every (row, fiscal-year or TQ cell with a value) becomes one line; a row's lines share
// its position ("line N"). Cells that are empty or "." are absent values, not zero. Rows identical in every
// descriptive column (names included) are one account line: their amounts are summed.
func Parse(r io.Reader, opt Options) ([]mirror.Item, error) {
	items, _, err := ParseEdition(r, opt)
	return items, err
}

// ParseEdition is Parse that also returns the edition the lines were filed under.
func ParseEdition(r io.Reader, opt Options) ([]mirror.Item, int, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	raw, err := cr.Read()
	if err != nil {
		return nil, 0, fmt.Errorf("omb: header: %w", err)
	}
	h, err := readHeader(raw, opt)
	if err != nil {
		return nil, 0, err
	}
	var items []mirror.Item
	index := map[string]int{} // id → position in items
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				items = append(items, mirror.Item{Pos: fmt.Sprintf("line %d", pe.Line), Err: err})
				continue
			}
			return nil, 0, fmt.Errorf("omb: %w", err)
		}
		line, _ := cr.FieldPos(0)
		pos := fmt.Sprintf("line %d", line)
		lines, err := h.row(rec)
		if err != nil {
			items = append(items, mirror.Item{Pos: pos, Err: err})
			continue
		}
		for _, l := range lines {
			if k, dup := index[l.ID]; dup {
				prev := items[k].Rec.(*mirror.BudgetLine)
				sum := math.Round((*prev.Amount+*l.Amount)*100) / 100
				prev.Amount = &sum
				continue
			}
			index[l.ID] = len(items)
			items = append(items, mirror.Item{Pos: pos, Rec: l})
		}
	}
	return items, h.Edition, nil
}

func (h *header) row(rec []string) ([]*mirror.BudgetLine, error) {
	get := func(k string) string {
		i, ok := h.col[k]
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
	if !digits(agencyCode) {
		return nil, fmt.Errorf("agency code %q is not a numeric code", agencyCode)
	}
	// "Receipts, …" rows carry no account code: the line is served with account_code null.
	accountPart := accountCode
	if accountCode == "" {
		accountPart = "none"
	} else if !digits(accountCode) {
		return nil, fmt.Errorf("account code %q is not a numeric code", accountCode)
	}
	hs := fnv.New32a()
	for _, k := range identity {
		_, _ = io.WriteString(hs, get(k)+"\x00")
	}
	sum := hs.Sum32()
	edition := h.Edition
	var out []*mirror.BudgetLine
	for _, yc := range h.years {
		if yc.index >= len(rec) {
			continue
		}
		v := strings.ReplaceAll(strings.TrimSpace(rec[yc.index]), ",", "")
		if v == "" || v == "." || v == "-" {
			continue
		}
		thousands, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsInf(thousands, 0) || math.IsNaN(thousands) {
			return nil, fmt.Errorf("%s amount %q is not a number", yc.label(), rec[yc.index])
		}
		amount := math.Round(thousands*1000*100) / 100
		estimate := !yc.tq && yc.fy >= edition-1
		l := &mirror.BudgetLine{FederalBudgetLine: records.FederalBudgetLine{
			ID: fmt.Sprintf("%s%s-%s-%s-%s-%08x", Scope(edition), yc.idPart(), agencyCode, get("bureau_code"),
				accountPart, sum),
			Dataset: records.DatasetAppropriations, FiscalYear: yc.fy, Congress: CongressForFiscalYear(yc.fy),
			AgencyCode: &agencyCode, AgencyName: agencyName, BureauCode: opt("bureau_code"), BureauName: opt("bureau_name"),
			AccountCode: opt("account_code"), AccountTitle: title, SubfunctionCode: opt("subfunction_code"),
			SubfunctionTitle: opt("subfunction_title"), BeaCategory: opt("bea_category"), OnOffBudget: opt("on_off_budget"),
			Amount: &amount, Edition: &edition, Estimate: &estimate, TransitionQuarter: yc.tq,
		}}
		src := SourceURL
		l.SourceURL = &src
		out = append(out, l)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].FiscalYear < out[j].FiscalYear })
	return out, nil
}

func (y yearColumn) idPart() string {
	if y.tq {
		return "tq1976"
	}
	return "fy" + strconv.Itoa(y.fy)
}

func (y yearColumn) label() string {
	if y.tq {
		return "TQ (transition quarter 1976)"
	}
	return "fiscal year " + strconv.Itoa(y.fy)
}

// CongressForFiscalYear is the Congress in session on Oct 1 of FY−1: floor((FY−1788)/2). The transition
// quarter (July–September 1976) is in the 94th Congress, like FY1976.
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
