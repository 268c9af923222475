// Package mts imports OUTLAYS budget lines from the Monthly Treasury Statement Table 5 (Fiscal Data API
// `mts_table_5`: {data[], meta, links}); dollar amounts are decimal strings, rows mix agency headings,
// bureau/account lines and totals.
package mts

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/backend/mirror/pager"
	"github.com/civicgate/civicgate/backend/records"
)

// SourceName identifies this source in sync_state and snapshots.
const SourceName = "mts"

const sourceBase = "https://api.fiscaldata.treasury.gov/services/api/fiscal_service/v1/accounting/mts/mts_table_5?filter=record_date:eq:"

type row struct {
	RecordDate     string `json:"record_date"`
	ID             string `json:"classification_id"`
	Desc           string `json:"classification_desc"`
	ParentID       string `json:"parent_id"`
	NetOutlays     string `json:"current_month_net_outly_amt"`
	FYTDNetOutlays string `json:"current_fytd_net_outly_amt"`
	FiscalYear     string `json:"record_fiscal_year"`
}

// Decoder remembers classification headings across pages so lines get their agency.
type Decoder struct {
	desc   map[string]string // classification_id → description
	parent map[string]string // classification_id → parent_id
}

// NewDecoder returns a decoder with no headings seen.
func NewDecoder() *Decoder { return &Decoder{desc: map[string]string{}, parent: map[string]string{}} }

// Decode reads one page (page is 1-based, for positions). Heading rows (neither amount) and "Total…" rows
// (sums of other rows) are not budget lines and yield no item; an amount given as "null" is absent.
func (d *Decoder) Decode(body []byte, page int) (pager.Page, error) {
	var env struct {
		Data  []json.RawMessage `json:"data"`
		Links struct {
			Next *string `json:"next"`
		} `json:"links"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return pager.Page{}, fmt.Errorf("mts: not a Fiscal Data page: %w", err)
	}
	p := pager.Page{More: env.Links.Next != nil && *env.Links.Next != ""}
	for i, raw := range env.Data {
		pos := fmt.Sprintf("data[%d] of page %d", i, page)
		var r row
		if err := json.Unmarshal(raw, &r); err != nil {
			p.Items = append(p.Items, mirror.Item{Pos: pos, Err: err})
			continue
		}
		l, err := d.normalize(&r)
		if err != nil {
			p.Items = append(p.Items, mirror.Item{Pos: pos, Err: err})
			continue
		}
		if l != nil {
			p.Items = append(p.Items, mirror.Item{Pos: pos, Rec: l})
		}
	}
	return p, nil
}

func (d *Decoder) normalize(r *row) (*mirror.BudgetLine, error) {
	id, desc := strings.TrimSpace(r.ID), strings.TrimSpace(r.Desc)
	if id == "" || desc == "" {
		return nil, errors.New("classification_id or classification_desc is missing")
	}
	d.desc[id] = desc
	d.parent[id] = strings.TrimSpace(r.ParentID)
	net, err := parseAmount(r.NetOutlays)
	if err != nil {
		return nil, fmt.Errorf("current_month_net_outly_amt: %w", err)
	}
	fytd, err := parseAmount(r.FYTDNetOutlays)
	if err != nil {
		return nil, fmt.Errorf("current_fytd_net_outly_amt: %w", err)
	}
	// A heading has neither amount; a row with only one ("null" for the month, a number for the fiscal year
	// to date, e.g. "Offsetting Governmental Receipts") is a line with the other left null.
	if (net == nil && fytd == nil) || strings.HasPrefix(strings.ToLower(desc), "total") {
		return nil, nil
	}
	day, err := time.Parse(time.DateOnly, r.RecordDate)
	if err != nil {
		return nil, fmt.Errorf("record_date: %w", err)
	}
	fy, err := strconv.Atoi(strings.TrimSpace(r.FiscalYear))
	if err != nil {
		return nil, fmt.Errorf("record_fiscal_year %q: %w", r.FiscalYear, err)
	}
	month, date := r.RecordDate[:7], r.RecordDate
	src := sourceBase + r.RecordDate
	return &mirror.BudgetLine{FederalBudgetLine: records.FederalBudgetLine{
		ID: "outlays-" + r.RecordDate + "-" + id, Dataset: "OUTLAYS", FiscalYear: fy, Congress: congressOn(day),
		Month: &month, RecordDate: &date, AgencyName: d.agency(id), AccountTitle: desc,
		Amount: net, FiscalYearToDateAmount: fytd, SourceURL: &src,
	}}, nil
}

// agency is the description of the top-level heading above id (itself when it has none), without the
// trailing colon of headings.
func (d *Decoder) agency(id string) string {
	cur := id
	for range 16 {
		p := d.parent[cur]
		if p == "" || p == "null" || d.desc[p] == "" {
			break
		}
		cur = p
	}
	return strings.TrimSuffix(strings.TrimSpace(d.desc[cur]), ":")
}

func parseAmount(s string) (*float64, error) {
	s = strings.TrimSpace(strings.ReplaceAll(s, ",", ""))
	if s == "" || s == "null" {
		return nil, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("%q is not an amount", s)
	}
	v = math.Round(v*100) / 100
	return &v, nil
}

// congressOn is the Congress in session on day: Congress N runs Jan 3 of 1787+2N to Jan 3 of 1789+2N.
func congressOn(day time.Time) int {
	c := (day.Year() - 1787) / 2
	if day.Year()%2 == 1 && day.Month() == time.January && day.Day() < 3 {
		c--
	}
	return c
}
