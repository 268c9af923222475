package seed

import (
	"fmt"
	"strings"
	"time"

	"github.com/civicgate/civicgate/backend/records"
)

// Columns written for bills (generated columns sort_date and search are omitted; migrations README).
var billColumns = []string{"id", "congress", "type", "number", "official_title", "introduced_date", "member_name",
	"member_bioguide_id", "member_by_congress_key", "committee_names", "source_url", "last_synced_at"}

// rareTopics appear in about one bill in 10,000 (the "rare term" of the benchmark).
var rareTopics = []string{"lighthouse preservation", "seismic retrofits of tribal schools", "bison herd restoration"}

// billsOfCongress streams the bills of one Congress: n bills split over the eight types by weight,
// numbered 1..k per type in introduction order.
func billsOfCongress(seed uint64, c, n int, ro *roster, now time.Time, emit func([]any) error) error {
	r := newRNG(seed, uint64(1000+c))
	start := congressStart(c)
	end := congressStart(c+1).AddDate(0, 0, -1)
	if end.After(now) {
		end = now
	}
	span := int(end.Sub(start).Hours() / 24)
	total := 0
	for _, bt := range billTypes {
		total += bt.weight
	}
	for ti, bt := range billTypes {
		k := n * bt.weight / total
		if ti == 0 {
			k += n - sumTypeCounts(n, total) // remainder to hr so the Congress has exactly n bills
		}
		chamber := "senate"
		if bt.house {
			chamber = "house"
		}
		for num := 1; num <= k; num++ {
			id := fmt.Sprintf("%s%d-%d", bt.code, num, c)
			var introduced any
			if !(c < 97 && r.chance(0.003)) { // a few old records lack an introduced date
				off := int(int64(span) * int64(num-1) / int64(k))
				introduced = start.AddDate(0, 0, off+r.IntN(2))
			}
			var name, bioguide, key any
			if pool := ro.serving[c][chamber]; len(pool) > 0 && !r.chance(0.004) {
				sp := pool[r.IntN(len(pool))]
				name, bioguide, key = sp.m.sponsorName(sp.t), sp.m.id, sp.m.id+":"+fmt.Sprint(c)
			}
			row := []any{id, c, bt.code, num, billTitle(r, bt.code, c), introduced, name, bioguide, key,
				committees(r, chamber), fmt.Sprintf("https://www.congress.gov/bill/%s-congress/%s/%d", records.Ordinal(c), bt.slug, num),
				now.Add(-time.Duration(r.IntN(86400)) * time.Second)}
			if err := emit(row); err != nil {
				return err
			}
		}
	}
	return nil
}

func sumTypeCounts(n, total int) int {
	s := 0
	for _, bt := range billTypes {
		s += n * bt.weight / total
	}
	return s
}

func committees(r rng, chamber string) string {
	list := houseCommittees
	if chamber == "senate" {
		list = senateCommittees
	}
	switch x := r.Float64(); {
	case x < 0.05:
		return ""
	case x < 0.8:
		return pick(r, list)
	default:
		a, b := pick(r, list), pick(r, list)
		if a == b {
			return a
		}
		return a + "; " + b
	}
}

func topic(r rng) string {
	if r.chance(0.0001) {
		return pick(r, rareTopics)
	}
	return topics[r.zipf(len(topics))]
}

func billTitle(r rng, typ string, c int) string {
	chamberName := "House of Representatives"
	if strings.HasPrefix(typ, "s") {
		chamberName = "Senate"
	}
	year := congressStart(c).Year()
	switch typ {
	case "hr", "s":
		lead := "To"
		if typ == "s" {
			lead = "A bill to"
		}
		if r.chance(0.6) {
			return fmt.Sprintf("%s amend %s %s %s, and for other purposes.", lead, pick(r, statutes), pick(r, purposes), topic(r))
		}
		return fmt.Sprintf("%s %s %s, and for other purposes.", lead, strings.TrimPrefix(pick(r, purposes), "to "), topic(r))
	case "hres", "sres":
		switch r.IntN(3) {
		case 0:
			return fmt.Sprintf("Supporting the designation of %s.", pick(r, resolutionSubjects))
		case 1:
			return fmt.Sprintf("Expressing the sense of the %s regarding %s.", chamberName, topic(r))
		default:
			return fmt.Sprintf("Recognizing the %s of %s, %s.", records.Ordinal(25*(1+r.IntN(8))), pick(r, cities), pick(r, states).code)
		}
	case "hjres", "sjres":
		if r.chance(0.7) {
			a := pick(r, frAgencies[:presidentAgency])
			return fmt.Sprintf("Providing for congressional disapproval under chapter 8 of title 5, United States Code, of the rule submitted by the %s relating to \"%s\".", a.name, pick(r, regSubjects))
		}
		return fmt.Sprintf("Proposing an amendment to the Constitution of the United States relating to %s.", topic(r))
	default: // hconres, sconres
		if r.chance(0.5) {
			return fmt.Sprintf("Establishing the congressional budget for the United States Government for fiscal year %d and setting forth the appropriate budgetary levels for fiscal years %d through %d.", year+1, year+2, year+10)
		}
		return fmt.Sprintf("Authorizing the use of the Capitol Grounds for %s.", pick(r, resolutionSubjects))
	}
}

// memberRows streams members; termRows streams member_terms.
var memberColumns = []string{"member_id", "bioguide_id", "name", "state", "last_synced_at"}
var termColumns = []string{"member_id", "congress", "chamber", "party", "state", "district"}
