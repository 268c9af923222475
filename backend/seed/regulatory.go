package seed

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

var regulatoryColumns = []string{"id", "document_number", "type", "subtype", "title", "abstract", "action",
	"agency_id", "agency_name", "agencies", "agency_ids", "agency_names", "publication_date", "filing_year",
	"filing_period", "correction_of", "effective_on", "comments_close_on", "rins", "docket_ids", "citation",
	"significant", "html_url", "pdf_url", "source_url", "last_synced_at"}

const (
	firstRegYear = 2000
	lastRegYear  = 2026
)

type agencyJSON struct {
	AgencyID       string  `json:"agency_id"`
	Name           string  `json:"name"`
	Slug           string  `json:"slug"`
	ParentAgencyID *string `json:"parent_agency_id"`
}

func quarter(t time.Time) string { return fmt.Sprintf("Q%d", (int(t.Month())-1)/3+1) }

// rin returns the k-th Regulation Identifier Number of an agency: 4-digit agency code, "-", 2 letters
// and 2 alphanumerics (e.g. 2060-AV12). A small pool per agency makes RINs recur (proposed → final rule).
func rin(a frAgency, k int) string {
	const letters = "ABCDEFGHJKLMNPQRSTUVWXYZ"
	const alnum = "0123456789ABCDEFGHJKLMNPQRSTUVWXYZ"
	return fmt.Sprintf("%s-A%c%c%c", a.rin, letters[k%len(letters)], alnum[(k/len(letters))%len(alnum)], alnum[(k*7)%len(alnum)])
}

func docket(r rng, a frAgency, year int) string {
	switch a.docket {
	case "RM": // FERC
		return fmt.Sprintf("RM%02d-%d-000", year%100, 1+r.IntN(30))
	case "FDA":
		return fmt.Sprintf("FDA-%d-N-%04d", year, r.IntN(6000))
	default:
		return fmt.Sprintf("%s-%d-%04d", a.docket, year, r.IntN(1200))
	}
}

// regulatoryOfYear streams n Federal Register documents published in year (document numbers YYYY-NNNNN in
// publication order), about 2% of them corrections of earlier documents of the same year.
func regulatoryOfYear(seed uint64, year, n int, now time.Time, emit func([]any) error) error {
	r := newRNG(seed, uint64(2000+year))
	start := time.Date(year, time.January, 2, 0, 0, 0, 0, time.UTC)
	end := time.Date(year, time.December, 31, 0, 0, 0, 0, time.UTC)
	if end.After(now) {
		end = day(now)
	}
	span := int(end.Sub(start).Hours() / 24)
	seq := 100 + r.IntN(200)
	page := 1
	var issued []string
	typeTotal := 0
	for _, t := range frTypes {
		typeTotal += t.weight
	}
	for i := 0; i < n; i++ {
		pub := start.AddDate(0, 0, int(int64(span)*int64(i)/int64(n)))
		// The Federal Register publishes on business days: weekends move to Monday, or to Friday at year end.
		if wd := pub.Weekday(); wd == time.Saturday || wd == time.Sunday {
			next := pub.AddDate(0, 0, map[time.Weekday]int{time.Saturday: 2, time.Sunday: 1}[wd])
			if next.Year() != year {
				next = pub.AddDate(0, 0, map[time.Weekday]int{time.Saturday: -1, time.Sunday: -2}[wd])
			}
			pub = next
		}
		seq += 1 + r.IntN(3)
		docNum := fmt.Sprintf("%d-%05d", year, seq)
		id := docNum
		var correctionOf any
		period := quarter(pub)
		x := r.IntN(typeTotal)
		typ := frTypes[len(frTypes)-1].code
		for _, t := range frTypes {
			if x < t.weight {
				typ = t.code
				break
			}
			x -= t.weight
		}
		ag := frAgencies[r.zipf(presidentAgency)]
		if typ == "PRESIDENTIAL_DOCUMENT" {
			ag = frAgencies[presidentAgency]
		}
		subject := pick(r, regSubjects)
		title := subject
		var subtype, action any
		if typ == "PRESIDENTIAL_DOCUMENT" {
			st := pick(r, presidentialSubtypes)
			subtype = st
			title = fmt.Sprintf("%s: %s", st, topicTitle(topic(r)))
		} else {
			action = pick(r, ruleActions[typ])
		}
		if len(issued) > 10 && typ != "PRESIDENTIAL_DOCUMENT" && r.chance(0.02) {
			k := r.IntN(len(issued))
			orig := issued[k]
			issued[k] = issued[len(issued)-1] // each document is corrected at most once: ids stay unique
			issued = issued[:len(issued)-1]
			correctionOf = orig
			id = "C1-" + orig
			docNum = id
			period = "AMENDMENT"
			title += "; Correction"
			action = "Correction."
			seq-- // corrections carry the corrected document's number, not a new one
		} else {
			issued = append(issued, docNum)
		}
		agencies := []agencyJSON{{AgencyID: ag.id, Name: ag.name, Slug: ag.slug}}
		if ag.parent != "" {
			agencies[0].ParentAgencyID = strp(ag.parent)
			if r.chance(0.6) {
				for _, p := range frAgencies {
					if p.id == ag.parent {
						agencies = append([]agencyJSON{{AgencyID: p.id, Name: p.name, Slug: p.slug}}, agencies...)
					}
				}
			}
		}
		ids := make([]string, len(agencies))
		names := make([]string, len(agencies))
		for k, a := range agencies {
			ids[k], names[k] = a.AgencyID, a.Name
		}
		agJSON, err := json.Marshal(agencies)
		if err != nil {
			return fmt.Errorf("seed: agencies json: %w", err)
		}
		rins, dockets := []string{}, []string{}
		var effective, commentsClose, significant any
		switch typ {
		case "RULE", "PROPOSED_RULE":
			if ag.rin != "" && r.chance(0.7) {
				rins = append(rins, rin(ag, r.IntN(400)))
			}
			significant = r.chance(0.12)
			if typ == "RULE" {
				effective = pub.AddDate(0, 0, 30*(1+r.IntN(2)))
			} else {
				commentsClose = pub.AddDate(0, 0, 30*(1+r.IntN(3)))
			}
		}
		if ag.docket != "" && r.chance(0.55) {
			dockets = append(dockets, docket(r, ag, year))
		}
		var abstract any
		if typ != "PRESIDENTIAL_DOCUMENT" {
			abstract = fmt.Sprintf("The %s %s %s. This action concerns %s.", ag.name, abstractVerb(typ), strings.ToLower(subject), topic(r))
		}
		pages := 1 + r.IntN(40)
		citation := fmt.Sprintf("%d FR %d", year-1935, page)
		page += pages
		slug := slugify(title)
		row := []any{id, docNum, typ, subtype, title, abstract, action, ids[0], names[0], agJSON, ids, names,
			pub, year, period, correctionOf, effective, commentsClose, rins, dockets, citation, significant,
			fmt.Sprintf("https://www.federalregister.gov/documents/%s/%s", pub.Format("2006/01/02"), docNum+"/"+slug),
			fmt.Sprintf("https://www.govinfo.gov/content/pkg/FR-%s/pdf/%s.pdf", pub.Format("2006-01-02"), docNum),
			fmt.Sprintf("https://www.federalregister.gov/api/v1/documents/%s.json", docNum),
			now.Add(-time.Duration(r.IntN(86400)) * time.Second)}
		if err := emit(row); err != nil {
			return err
		}
	}
	return nil
}

func abstractVerb(typ string) string {
	switch typ {
	case "RULE":
		return "is issuing a final rule on"
	case "PROPOSED_RULE":
		return "proposes to amend its regulations on"
	default:
		return "announces"
	}
}

func topicTitle(s string) string {
	words := strings.Fields(s)
	for i, w := range words {
		if len(w) > 3 || i == 0 {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ")
}

func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
			b.WriteRune(c)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 80 {
			break
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}
