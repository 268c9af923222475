// Package lda imports lobbying disclosures from the Senate LDA API filings JSON
// (`/api/v1/filings/`: {count, next, previous, results[]}).
package lda

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/backend/mirror/pager"
	"github.com/civicgate/civicgate/backend/records"
)

// SourceName identifies this source in sync_state and snapshots.
const SourceName = "lda"

// KeyEnv is the environment variable holding the LDA API key (sent as "Authorization: Token <key>").
const KeyEnv = "LDA_API_KEY"

type filing struct {
	UUID            string  `json:"filing_uuid"`
	Type            string  `json:"filing_type"`
	TypeDisplay     *string `json:"filing_type_display"`
	Year            int     `json:"filing_year"`
	Period          *string `json:"filing_period"`
	Income          *string `json:"income"`
	Expenses        *string `json:"expenses"`
	Posted          *string `json:"dt_posted"`
	TerminationDate *string `json:"termination_date"`
	DocumentURL     *string `json:"filing_document_url"`
	URL             *string `json:"url"`
	Registrant      struct {
		ID   json.Number `json:"id"`
		Name string      `json:"name"`
	} `json:"registrant"`
	Client struct {
		ID          json.Number `json:"id"`
		Name        string      `json:"name"`
		Description *string     `json:"general_description"`
	} `json:"client"`
	Activities []struct {
		Code        string  `json:"general_issue_code"`
		CodeDisplay *string `json:"general_issue_code_display"`
		Description *string `json:"description"`
		Lobbyists   []struct {
			Lobbyist struct {
				ID     *json.Number `json:"id"`
				First  string       `json:"first_name"`
				Middle *string      `json:"middle_name"`
				Last   string       `json:"last_name"`
				Suffix *string      `json:"suffix"`
			} `json:"lobbyist"`
			CoveredPosition *string `json:"covered_position"`
			New             *bool   `json:"new"`
		} `json:"lobbyists"`
		Entities []struct {
			Name string `json:"name"`
		} `json:"government_entities"`
	} `json:"lobbying_activities"`
}

var periods = map[string]string{
	"first_quarter": "Q1", "second_quarter": "Q2", "third_quarter": "Q3", "fourth_quarter": "Q4",
	"mid_year": "Q2", "year_end": "Q4",
}

// Decode reads one filings page (page is 1-based, for positions).
func Decode(body []byte, page int) (pager.Page, error) {
	var env struct {
		Next    *string           `json:"next"`
		Results []json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return pager.Page{}, fmt.Errorf("lda: not a filings page: %w", err)
	}
	p := pager.Page{More: env.Next != nil && *env.Next != ""}
	p.Items = pager.DecodeItems(env.Results, page, normalize)
	return p, nil
}

// Period maps an LDA filing type and period onto Q1..Q4 or AMENDMENT (types containing A or @).
func Period(filingType string, period *string, posted *time.Time) (string, error) {
	if strings.ContainsAny(strings.ToUpper(filingType), "A@") {
		return "AMENDMENT", nil
	}
	if period != nil {
		if q, ok := periods[*period]; ok {
			return q, nil
		}
		if *period != "" {
			return "", fmt.Errorf("filing_period %q is unknown", *period)
		}
	}
	if posted != nil { // registrations carry no period: the quarter they were posted in
		return "Q" + strconv.Itoa((int(posted.Month())-1)/3+1), nil
	}
	return "", errors.New("filing_period is missing")
}

func normalize(f *filing) (*mirror.LobbyingDisclosure, error) {
	if strings.TrimSpace(f.UUID) == "" {
		return nil, errors.New("filing_uuid is missing")
	}
	if strings.TrimSpace(f.Type) == "" {
		return nil, errors.New("filing_type is missing")
	}
	if f.Year <= 0 {
		return nil, errors.New("filing_year is missing")
	}
	if f.Registrant.ID == "" || strings.TrimSpace(f.Registrant.Name) == "" {
		return nil, errors.New("registrant id/name missing")
	}
	if f.Client.ID == "" || strings.TrimSpace(f.Client.Name) == "" {
		return nil, errors.New("client id/name missing")
	}
	d := &mirror.LobbyingDisclosure{LobbyingDisclosure: records.LobbyingDisclosure{
		ID: f.UUID, FilingType: f.Type, FilingTypeDisplay: mirror.Trimmed(f.TypeDisplay), FilingYear: f.Year,
		RegistrantID: f.Registrant.ID.String(), RegistrantName: strings.TrimSpace(f.Registrant.Name),
		ClientID: f.Client.ID.String(), ClientName: strings.TrimSpace(f.Client.Name), ClientDescription: mirror.Trimmed(f.Client.Description),
		DocumentURL: mirror.Trimmed(f.DocumentURL), SourceURL: mirror.Trimmed(f.URL),
		IssueAreas: []string{}, LobbyistNames: []string{}, AgenciesActedOn: []string{}, Activities: []records.LobbyingActivity{},
	}}
	var posted *time.Time
	if p := mirror.Trimmed(f.Posted); p != nil {
		t, err := time.Parse(time.RFC3339Nano, *p)
		if err != nil {
			return nil, fmt.Errorf("dt_posted: %w", err)
		}
		posted = &t
		s := t.UTC().Format("2006-01-02T15:04:05.000000Z")
		d.PostedAt = &s
	}
	period, err := Period(f.Type, f.Period, posted)
	if err != nil {
		return nil, err
	}
	d.FilingPeriod = period
	if t := mirror.Trimmed(f.TerminationDate); t != nil {
		if _, err := time.Parse(time.DateOnly, *t); err != nil {
			return nil, fmt.Errorf("termination_date: %w", err)
		}
		d.TerminationDate = t
	}
	for _, m := range []struct {
		in  *string
		out **float64
		n   string
	}{{f.Income, &d.Income, "income"}, {f.Expenses, &d.Expenses, "expenses"}} {
		if v := mirror.Trimmed(m.in); v != nil {
			x, err := strconv.ParseFloat(strings.ReplaceAll(*v, ",", ""), 64)
			if err != nil {
				return nil, fmt.Errorf("%s %q: %w", m.n, *v, err)
			}
			*m.out = &x
		}
	}
	seenArea, seenName, seenAgency := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for j, a := range f.Activities {
		code := strings.TrimSpace(a.Code)
		if code == "" {
			return nil, fmt.Errorf("lobbying_activities[%d].general_issue_code is missing", j)
		}
		act := records.LobbyingActivity{IssueArea: code, IssueAreaName: mirror.Trimmed(a.CodeDisplay), Description: mirror.Trimmed(a.Description),
			AgenciesActedOn: []string{}, Lobbyists: []records.Lobbyist{}}
		if !seenArea[code] {
			seenArea[code] = true
			d.IssueAreas = append(d.IssueAreas, code)
		}
		for _, e := range a.Entities {
			n := strings.TrimSpace(e.Name)
			if n == "" {
				continue
			}
			act.AgenciesActedOn = append(act.AgenciesActedOn, n)
			if !seenAgency[n] {
				seenAgency[n] = true
				d.AgenciesActedOn = append(d.AgenciesActedOn, n)
			}
		}
		for _, l := range a.Lobbyists {
			parts := []string{strings.TrimSpace(l.Lobbyist.First)}
			if m := mirror.Trimmed(l.Lobbyist.Middle); m != nil {
				parts = append(parts, *m)
			}
			parts = append(parts, strings.TrimSpace(l.Lobbyist.Last))
			if s := mirror.Trimmed(l.Lobbyist.Suffix); s != nil {
				parts = append(parts, *s)
			}
			name := strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
			if name == "" {
				continue
			}
			lb := records.Lobbyist{Name: name, CoveredPosition: mirror.Trimmed(l.CoveredPosition), IsNew: l.New != nil && *l.New}
			if l.Lobbyist.ID != nil {
				s := l.Lobbyist.ID.String()
				lb.LobbyistID = &s
			}
			act.Lobbyists = append(act.Lobbyists, lb)
			if !seenName[name] {
				seenName[name] = true
				d.LobbyistNames = append(d.LobbyistNames, name)
			}
		}
		d.Activities = append(d.Activities, act)
	}
	return d, nil
}
