package seed

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

var lobbyingColumns = []string{"id", "filing_type", "filing_type_display", "filing_year", "filing_period",
	"registrant_id", "registrant_name", "client_id", "client_name", "client_description", "income", "expenses",
	"posted_at", "termination_date", "issue_areas", "lobbyist_names", "agencies_acted_on", "activities",
	"document_url", "source_url", "last_synced_at"}

const (
	firstLobbyYear = 1999
	lastLobbyYear  = 2026
)

type lobbyist struct{ id, name string }

type registrant struct {
	id, name  string
	selfFiler bool
	lobbyists []lobbyist
	clients   []client
}

type client struct{ id, name, description string }

// lobbyingParties builds synthetic registrants (lobbying firms and self-filing organisations), their
// clients and lobbyists. LDA terms forbid presenting edited content as LDA data: these names are invented.
func lobbyingParties(seed uint64, n int) []registrant {
	r := newRNG(seed, 6)
	nReg := max(20, n/60)
	clientID := 0
	lobbyistID := 0
	out := make([]registrant, nReg)
	for i := range out {
		reg := registrant{id: fmt.Sprint(400000 + i*7 + 3)}
		if r.chance(0.3) {
			ind := pick(r, clientIndustries)
			reg.name = fmt.Sprintf("%s %s", pick(r, cities), ind.suffix)
			reg.selfFiler = true
			clientID++
			reg.clients = []client{{id: fmt.Sprint(clientID), name: reg.name, description: ind.description}}
		} else {
			a, b := pick(r, lastNames), pick(r, lastNames)
			if r.chance(0.5) {
				reg.name = fmt.Sprintf("%s %s %s LLC", a, b, pick(r, lobbyFirmWords))
			} else {
				reg.name = fmt.Sprintf("%s & %s LLP", a, b)
			}
			for k := 0; k < 2+r.IntN(12); k++ {
				ind := pick(r, clientIndustries)
				clientID++
				reg.clients = append(reg.clients, client{id: fmt.Sprint(clientID),
					name: fmt.Sprintf("%s %s %s", pick(r, cities), pick(r, lastNames), ind.suffix), description: ind.description})
			}
		}
		for k := 0; k < 1+r.IntN(8); k++ {
			lobbyistID++
			name := fmt.Sprintf("%s %s", strings.ToUpper(pick(r, firstNames)), strings.ToUpper(pick(r, lastNames)))
			reg.lobbyists = append(reg.lobbyists, lobbyist{id: fmt.Sprint(lobbyistID), name: name})
		}
		out[i] = reg
	}
	return out
}

// issueOrder lists LDA issue codes from most to least often reported (roughly as in real filings).
var issueOrder = func() []int {
	popular := []string{"BUD", "HCR", "TAX", "DEF", "ENG", "TRA", "ENV", "TRD", "EDU", "MMM", "FIN", "AGR", "HOM", "IMM", "TEC", "LBR", "VET", "SCI", "GOV", "CSP"}
	idx := map[string]int{}
	for i, it := range ldaIssues {
		idx[it.code] = i
	}
	seen := map[int]bool{}
	var out []int
	for _, c := range popular {
		out = append(out, idx[c])
		seen[idx[c]] = true
	}
	for i := range ldaIssues {
		if !seen[i] {
			out = append(out, i)
		}
	}
	return out
}()

type lobbyistJSON struct {
	LobbyistID      string  `json:"lobbyist_id"`
	Name            string  `json:"name"`
	CoveredPosition *string `json:"covered_position"`
	IsNew           bool    `json:"is_new"`
}

type activityJSON struct {
	IssueArea       string         `json:"issue_area"`
	IssueAreaName   string         `json:"issue_area_name"`
	Description     string         `json:"description"`
	AgenciesActedOn []string       `json:"agencies_acted_on"`
	Lobbyists       []lobbyistJSON `json:"lobbyists"`
}

var quarterNames = []string{"1st Quarter", "2nd Quarter", "3rd Quarter", "4th Quarter"}

// filingType draws an LDA filing type for a year and returns (code, display, period, quarter 1..4).
func filingType(r rng, year int) (string, string, string, int) {
	q := 1 + r.IntN(4)
	qn := quarterNames[q-1]
	if year < 2008 { // semiannual reports before HLOGA
		half := 1 + r.IntN(2)
		switch x := r.Float64(); {
		case x < 0.08:
			return "RR", "Registration", fmt.Sprintf("Q%d", q), q
		case x < 0.15:
			if half == 1 {
				return "MA", "Mid-Year Amendment", "AMENDMENT", 2
			}
			return "YA", "Year-End Amendment", "AMENDMENT", 4
		default:
			if half == 1 {
				return "MM", "Mid-Year Report", "Q2", 2
			}
			return "YY", "Year-End Report", "Q4", 4
		}
	}
	switch x := r.Float64(); {
	case x < 0.06:
		return "RR", "Registration", fmt.Sprintf("Q%d", q), q
	case x < 0.07:
		return "RA", "Registration Amendment", "AMENDMENT", q
	case x < 0.16:
		return fmt.Sprintf("%dA", q), qn + " - Amendment", "AMENDMENT", q
	case x < 0.19:
		return fmt.Sprintf("%dT", q), qn + " - Termination", fmt.Sprintf("Q%d", q), q
	case x < 0.20:
		return fmt.Sprintf("%d@", q), qn + " - Termination Amendment", "AMENDMENT", q
	case x < 0.27:
		return fmt.Sprintf("Q%dY", q), qn + " - No Activity", fmt.Sprintf("Q%d", q), q
	default:
		return fmt.Sprintf("Q%d", q), qn + " - Report", fmt.Sprintf("Q%d", q), q
	}
}

// lobbyingOfYear streams n LD-1/LD-2 filings of one filing year.
func lobbyingOfYear(seed uint64, year, n int, regs []registrant, now time.Time, emit func([]any) error) error {
	r := newRNG(seed, uint64(3000+year))
	for i := 0; i < n; i++ {
		id := r.uuid4()
		code, display, period, q := filingType(r, year)
		reg := regs[r.zipf(len(regs))]
		cl := reg.clients[r.IntN(len(reg.clients))]
		// posted within 20 days after the quarter ends (registrations: during the quarter)
		qEnd := time.Date(year, time.Month(3*q+1), 1, 0, 0, 0, 0, time.UTC)
		posted := qEnd.Add(time.Duration(r.IntN(20*86400)) * time.Second)
		if code == "RR" {
			posted = qEnd.AddDate(0, -3, 0).Add(time.Duration(r.IntN(80*86400)) * time.Second)
		}
		var postedAt any = posted
		if posted.After(now) {
			posted = now.Add(-time.Duration(r.IntN(86400)) * time.Second)
			postedAt = posted
		}
		if r.chance(0.002) {
			postedAt = nil // a few legacy paper filings carry no posting time
		}
		var income, expenses, termination any
		noActivity := strings.HasSuffix(code, "Y")
		if !noActivity && code != "RR" && code != "RA" {
			amount := int64(math.Round(float64(5000+r.IntN(400000))/10000) * 10000)
			if reg.selfFiler {
				expenses = dollars(amount * 100)
			} else {
				income = dollars(amount * 100)
			}
		}
		if strings.ContainsAny(code, "T@") {
			termination = day(posted.AddDate(0, 0, -r.IntN(30)))
		}
		var acts []activityJSON
		issues, lobbyists, agencies := []string{}, []string{}, []string{}
		seenIssue, seenLob, seenAg := map[string]bool{}, map[string]bool{}, map[string]bool{}
		if !noActivity {
			for k := 0; k < 1+r.IntN(3); k++ {
				it := ldaIssues[issueOrder[r.zipf(len(issueOrder))]]
				verb := pick(r, activityVerbs)
				if strings.Contains(verb, "%d") {
					verb = fmt.Sprintf(verb, 1+r.IntN(9000))
				}
				act := activityJSON{IssueArea: it.code, IssueAreaName: it.name,
					Description: fmt.Sprintf("%s %s.", verb, topic(r)), AgenciesActedOn: []string{}, Lobbyists: []lobbyistJSON{}}
				for j := 0; j < 1+r.IntN(3); j++ {
					g := governmentEntities[r.zipf(len(governmentEntities))]
					if !slices.Contains(act.AgenciesActedOn, g) {
						act.AgenciesActedOn = append(act.AgenciesActedOn, g)
					}
				}
				for j := 0; j < 1+r.IntN(3); j++ {
					l := reg.lobbyists[r.IntN(len(reg.lobbyists))]
					if slices.ContainsFunc(act.Lobbyists, func(x lobbyistJSON) bool { return x.LobbyistID == l.id }) {
						continue
					}
					lj := lobbyistJSON{LobbyistID: l.id, Name: l.name, IsNew: r.chance(0.1)}
					if r.chance(0.15) {
						pos := pick(r, coveredPositions)
						if strings.Contains(pos, "%s") {
							pos = fmt.Sprintf(pos, pick(r, lastNames))
						}
						lj.CoveredPosition = &pos
					}
					act.Lobbyists = append(act.Lobbyists, lj)
				}
				acts = append(acts, act)
				if !seenIssue[it.code] {
					seenIssue[it.code] = true
					issues = append(issues, it.code)
				}
				for _, g := range act.AgenciesActedOn {
					if !seenAg[g] {
						seenAg[g] = true
						agencies = append(agencies, g)
					}
				}
				for _, l := range act.Lobbyists {
					if !seenLob[l.Name] {
						seenLob[l.Name] = true
						lobbyists = append(lobbyists, l.Name)
					}
				}
			}
		}
		if acts == nil {
			acts = []activityJSON{}
		}
		actJSON, err := json.Marshal(acts)
		if err != nil {
			return fmt.Errorf("seed: activities json: %w", err)
		}
		row := []any{id, code, display, year, period, reg.id, reg.name, cl.id, cl.name, cl.description, income,
			expenses, postedAt, termination, issues, lobbyists, agencies, actJSON,
			fmt.Sprintf("https://lda.senate.gov/filings/public/filing/%s/print/", id),
			fmt.Sprintf("https://lda.senate.gov/api/v1/filings/%s/", id),
			now.Add(-time.Duration(r.IntN(86400)) * time.Second)}
		if err := emit(row); err != nil {
			return err
		}
	}
	return nil
}
