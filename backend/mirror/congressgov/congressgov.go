// Package congressgov imports bills from the Congress.gov API v3: bill list pages (`bills[]`, offset/limit
// paging) and bill detail JSON with its `committees` and `titles` sub-resources, from saved files or the API.
package congressgov

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/backend/records"
)

// SourceName identifies this source in sync_state and snapshots.
const SourceName = "congressgov"

type listPage struct {
	Bills      []listItem `json:"bills"`
	Pagination struct {
		Count int    `json:"count"`
		Next  string `json:"next"`
	} `json:"pagination"`
}

type listItem struct {
	Congress int    `json:"congress"`
	Number   string `json:"number"`
	Title    string `json:"title"`
	Type     string `json:"type"`
	URL      string `json:"url"`
}

type detailDoc struct {
	Bill *billDetail `json:"bill"`
}

type billDetail struct {
	Congress       int       `json:"congress"`
	Number         string    `json:"number"`
	Type           string    `json:"type"`
	Title          string    `json:"title"`
	IntroducedDate string    `json:"introducedDate"`
	Sponsors       []sponsor `json:"sponsors"`
	Committees     struct {
		Count int    `json:"count"`
		URL   string `json:"url"`
	} `json:"committees"`
	Titles struct {
		Count int    `json:"count"`
		URL   string `json:"url"`
	} `json:"titles"`
}

type sponsor struct {
	BioguideID string `json:"bioguideId"`
	FullName   string `json:"fullName"`
}

type committeesDoc struct {
	Committees []struct {
		Name string `json:"name"`
	} `json:"committees"`
}

type titlesDoc struct {
	Titles []struct {
		Title     string `json:"title"`
		TitleType string `json:"titleType"`
	} `json:"titles"`
}

var billTypes = map[string]string{
	"hr": "house-bill", "s": "senate-bill", "hjres": "house-joint-resolution", "sjres": "senate-joint-resolution",
	"hconres": "house-concurrent-resolution", "sconres": "senate-concurrent-resolution",
	"hres": "house-resolution", "sres": "senate-resolution",
}

// key validates congress/type/number and returns the lowercase type and the number.
func key(congress int, typ, number string) (string, int, error) {
	t := strings.ToLower(strings.TrimSpace(typ))
	if _, ok := billTypes[t]; !ok {
		return "", 0, fmt.Errorf("type %q is not a bill type", typ)
	}
	n, err := strconv.Atoi(strings.TrimSpace(number))
	if err != nil || n <= 0 {
		return "", 0, fmt.Errorf("number %q is not a positive integer", number)
	}
	if congress <= 0 {
		return "", 0, fmt.Errorf("congress %d is not positive", congress)
	}
	return t, n, nil
}

// BillID is the record id `{type}{number}-{congress}`.
func BillID(congress int, typ string, number int) string {
	return fmt.Sprintf("%s%d-%d", typ, number, congress)
}

// PageURL is the bill's congress.gov page, e.g. https://www.congress.gov/bill/117th-congress/house-bill/21.
func PageURL(congress int, typ string, number int) string {
	return fmt.Sprintf("https://www.congress.gov/bill/%s-congress/%s/%d", records.Ordinal(congress), billTypes[typ], number)
}

// TitleFallback is the note kind of a bill whose officialTitle is not an official title (docs/design.md D31).
const TitleFallback = "title_fallback"

// fromDetail maps a bill detail plus its sub-resources (either may be nil) onto a record. note is set when
// officialTitle fell back to bill.title (no titles sub-resource, or no official title in it).
func fromDetail(d *billDetail, com *committeesDoc, tit *titlesDoc) (b *mirror.Bill, note string, err error) {
	typ, n, err := key(d.Congress, d.Type, d.Number)
	if err != nil {
		return nil, "", err
	}
	b = &mirror.Bill{Bill: records.Bill{ID: BillID(d.Congress, typ, n), Congress: d.Congress, Type: typ, Number: n}}
	var official bool
	b.OfficialTitle, official = officialTitle(d.Title, tit)
	if b.OfficialTitle == "" {
		return nil, "", errors.New("no title (neither an official title nor bill.title)")
	}
	if !official {
		if tit == nil {
			note = "officialTitle is bill.title: no titles sub-resource"
		} else {
			note = "officialTitle is bill.title: the titles sub-resource has no official title"
		}
	}
	if d.IntroducedDate != "" {
		if len(d.IntroducedDate) < 10 {
			return nil, "", fmt.Errorf("introducedDate %q is not a date", d.IntroducedDate)
		}
		day := d.IntroducedDate[:10]
		b.IntroducedDate = &day
	}
	if len(d.Sponsors) > 0 {
		s := d.Sponsors[0]
		if name := strings.TrimSpace(s.FullName); name != "" {
			b.MemberName = &name
		}
		if bio := strings.TrimSpace(s.BioguideID); bio != "" {
			b.MemberBioguideID = &bio
			k := fmt.Sprintf("%s:%d", bio, d.Congress)
			b.MemberByCongressKey = &k
		}
	}
	if com != nil {
		var names []string
		seen := map[string]bool{}
		for _, c := range com.Committees {
			name := strings.TrimSpace(c.Name)
			if name != "" && !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
		b.CommitteeNames = strings.Join(names, "; ")
	}
	u := PageURL(d.Congress, typ, n)
	b.SourceURL = &u
	return b, note, nil
}

// officialTitle prefers "Official Title as Introduced", then any other official title, then bill.title
// (official false).
func officialTitle(fallback string, tit *titlesDoc) (string, bool) {
	if tit != nil {
		for _, t := range tit.Titles {
			if t.TitleType == "Official Title as Introduced" && strings.TrimSpace(t.Title) != "" {
				return strings.TrimSpace(t.Title), true
			}
		}
		for _, t := range tit.Titles {
			if strings.HasPrefix(t.TitleType, "Official Title") && strings.TrimSpace(t.Title) != "" {
				return strings.TrimSpace(t.Title), true
			}
		}
	}
	return strings.TrimSpace(fallback), false
}

// fromListItem maps a list item that has no detail available (title as listed; no sponsor, committees).
func fromListItem(it *listItem) (*mirror.Bill, error) {
	typ, n, err := key(it.Congress, it.Type, it.Number)
	if err != nil {
		return nil, err
	}
	u := PageURL(it.Congress, typ, n)
	return &mirror.Bill{Bill: records.Bill{ID: BillID(it.Congress, typ, n), Congress: it.Congress, Type: typ, Number: n,
		OfficialTitle: strings.TrimSpace(it.Title), SourceURL: &u}}, nil
}

func decodeList(raw []byte) (*listPage, []json.RawMessage, error) {
	var env struct {
		Bills      []json.RawMessage `json:"bills"`
		Pagination json.RawMessage   `json:"pagination"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, nil, err
	}
	var p listPage
	if len(env.Pagination) > 0 {
		if err := json.Unmarshal(env.Pagination, &p.Pagination); err != nil {
			return nil, nil, fmt.Errorf("pagination: %w", err)
		}
	}
	return &p, env.Bills, nil
}
