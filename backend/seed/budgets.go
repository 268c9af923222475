package seed

import (
	"fmt"
	"math/big"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

var budgetColumns = []string{"id", "dataset", "fiscal_year", "congress", "month", "record_date", "agency_code",
	"agency_name", "bureau_code", "bureau_name", "account_code", "account_title", "subfunction_code",
	"subfunction_title", "bea_category", "on_off_budget", "amount", "fiscal_year_to_date_amount", "source_url",
	"last_synced_at"}

const (
	firstBudgetFY = 1976 // first fiscal year of the OMB Public Budget Database
	lastBudgetFY  = 2026
)

type account struct {
	agency ombAgency
	bureau ombBureau
	code   string
	title  string
	sub    int
	bea    string
	base   int64 // thousands of dollars in the first fiscal year
}

// accounts builds n OMB-style accounts spread over the real agencies and bureaus, with 4-digit account
// codes unique within an agency.
func accounts(seed uint64, n int) []account {
	r := newRNG(seed, 3)
	var bureaus []struct {
		a ombAgency
		b ombBureau
	}
	for _, a := range ombAgencies {
		for _, b := range a.bureaus {
			bureaus = append(bureaus, struct {
				a ombAgency
				b ombBureau
			}{a, b})
		}
	}
	next := map[string]int{}
	out := make([]account, 0, n)
	for i := 0; i < n; i++ {
		ab := bureaus[i%len(bureaus)]
		next[ab.a.code] += 1 + r.IntN(9)
		title := pick(r, accountStems) + pick(r, accountQualifiers)
		if i >= len(bureaus) { // beyond the first account per bureau, qualify with the bureau's programs
			title = fmt.Sprintf("%s, %s", title, ab.b.name)
		}
		out = append(out, account{agency: ab.a, bureau: ab.b, code: fmt.Sprintf("%04d", next[ab.a.code]%10000),
			title: title, sub: r.IntN(len(subfunctions)), bea: pick(r, beaCategories), base: int64(500 + r.IntN(2_000_000))})
	}
	return out
}

func dollars(cents int64) pgtype.Numeric {
	return pgtype.Numeric{Int: big.NewInt(cents), Exp: -2, Valid: true}
}

// appropriations streams one OMB budget-authority row per (account, fiscal year): amounts are in thousands
// upstream, stored ×1000 as dollars.
func appropriations(seed uint64, accts []account, n int, now time.Time, emit func([]any) error) error {
	r := newRNG(seed, 4)
	const src = "https://www.govinfo.gov/app/details/BUDGET-2026-DB"
	rows := 0
	for _, a := range accts {
		for fy := lastBudgetFY; fy >= firstBudgetFY && rows < n; fy-- {
			growth := 1 + float64(fy-firstBudgetFY)*0.04
			thousands := int64(float64(a.base)*growth) + int64(r.IntN(1000))
			if r.chance(0.02) {
				thousands = -thousands / 10 // rescission
			}
			sf := subfunctions[a.sub]
			onOff := "On-budget"
			if a.agency.code == "016" {
				onOff = "Off-budget"
			}
			id := fmt.Sprintf("APPROPRIATIONS-%d-%s-%s-%s", fy, a.agency.code, a.bureau.code, a.code)
			row := []any{id, "APPROPRIATIONS", fy, congressForFiscalYear(fy), nil, nil, a.agency.code, a.agency.name,
				a.bureau.code, a.bureau.name, a.code, a.title, sf.code, sf.title, a.bea, onOff,
				dollars(thousands * 1000 * 100), nil, src, now.Add(-time.Duration(r.IntN(86400)) * time.Second)}
			if err := emit(row); err != nil {
				return err
			}
			rows++
		}
	}
	return nil
}

// First month of Monthly Treasury Statement data generated (FY2015 began October 2014).
var firstOutlayMonth = time.Date(2014, time.October, 1, 0, 0, 0, 0, time.UTC)

// outlays streams Monthly Treasury Statement Table 5 lines: for each line, every month with the month's net
// outlays and the fiscal-year-to-date total (reset each October). MTS has no OMB codes, so codes are null.
func outlays(seed uint64, accts []account, n int, now time.Time, emit func([]any) error) error {
	r := newRNG(seed, 5)
	lastMonth := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, -1, 0)
	months := 0
	for m := firstOutlayMonth; !m.After(lastMonth); m = m.AddDate(0, 1, 0) {
		months++
	}
	// At least 40 lines (small scales then cover the most recent months only).
	lines := max((n+months-1)/months, min(40, n))
	first := lastMonth.AddDate(0, -((n+lines-1)/lines - 1), 0)
	if first.Before(firstOutlayMonth) {
		first = firstOutlayMonth
	}
	rows := 0
	for li := 0; li < lines && li < len(accts); li++ {
		a := accts[li]
		var fytd int64
		for m := first; !m.After(lastMonth) && rows < n; m = m.AddDate(0, 1, 0) {
			fy := m.Year()
			if m.Month() >= time.October {
				fy++
				if m.Month() == time.October {
					fytd = 0
				}
			}
			recordDate := m.AddDate(0, 1, -1)
			cents := (a.base*1000*100)/12 + int64(r.IntN(10_000_000_00)) - 5_000_000_00
			fytd += cents
			month := m.Format("2006-01")
			row := []any{fmt.Sprintf("OUTLAYS-%s-%05d", month, li), "OUTLAYS", fy, congressOf(recordDate), month,
				recordDate, nil, a.agency.name, nil, nil, nil, a.title, nil, nil, nil, nil, dollars(cents), dollars(fytd),
				"https://api.fiscaldata.treasury.gov/services/api/fiscal_service/v1/accounting/mts/mts_table_5?filter=record_date:eq:" + recordDate.Format("2006-01-02"),
				now.Add(-time.Duration(r.IntN(86400)) * time.Second)}
			if err := emit(row); err != nil {
				return err
			}
			rows++
		}
	}
	return nil
}
