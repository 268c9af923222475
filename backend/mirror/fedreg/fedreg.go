// Package fedreg imports regulatory filings from the Federal Register API documents JSON
// (`/api/v1/documents.json`: {count, total_pages, next_page_url, results[]}).
package fedreg

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
const SourceName = "fedreg"

type document struct {
	DocumentNumber  string          `json:"document_number"`
	Type            string          `json:"type"`
	Subtype         *string         `json:"subtype"`
	Title           string          `json:"title"`
	Abstract        *string         `json:"abstract"`
	Action          *string         `json:"action"`
	Agencies        []agency        `json:"agencies"`
	PublicationDate string          `json:"publication_date"`
	EffectiveOn     *string         `json:"effective_on"`
	CommentsCloseOn *string         `json:"comments_close_on"`
	RINs            []string        `json:"regulation_id_numbers"`
	DocketIDs       []string        `json:"docket_ids"`
	Citation        *string         `json:"citation"`
	Significant     *bool           `json:"significant"`
	CorrectionOf    json.RawMessage `json:"correction_of"`
	HTMLURL         *string         `json:"html_url"`
	PDFURL          *string         `json:"pdf_url"`
	JSONURL         *string         `json:"json_url"`
}

type agency struct {
	RawName  string       `json:"raw_name"`
	Name     string       `json:"name"`
	ID       *json.Number `json:"id"`
	ParentID *json.Number `json:"parent_id"`
	Slug     *string      `json:"slug"`
}

var types = map[string]string{
	"rule": "RULE", "proposed rule": "PROPOSED_RULE", "notice": "NOTICE", "presidential document": "PRESIDENTIAL_DOCUMENT",
	"prorule": "PROPOSED_RULE", "presdocu": "PRESIDENTIAL_DOCUMENT",
}

// Decode reads one documents.json page (page is 1-based, for positions).
func Decode(body []byte, page int) (pager.Page, error) {
	var env struct {
		TotalPages  int               `json:"total_pages"`
		NextPageURL *string           `json:"next_page_url"`
		Results     []json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return pager.Page{}, fmt.Errorf("fedreg: not a documents page: %w", err)
	}
	p := pager.Page{More: env.NextPageURL != nil && *env.NextPageURL != ""}
	p.Items = pager.DecodeItems(env.Results, page, normalize)
	return p, nil
}

func normalize(d *document) (*mirror.RegulatoryFiling, error) {
	num := strings.TrimSpace(d.DocumentNumber)
	if num == "" {
		return nil, errors.New("document_number is missing")
	}
	typ, ok := types[strings.ToLower(strings.TrimSpace(d.Type))]
	if !ok {
		return nil, fmt.Errorf("type %q is not Rule, Proposed Rule, Notice or Presidential Document", d.Type)
	}
	pub, err := time.Parse(time.DateOnly, d.PublicationDate)
	if err != nil {
		return nil, fmt.Errorf("publication_date: %w", err)
	}
	if strings.TrimSpace(d.Title) == "" {
		return nil, errors.New("title is missing")
	}
	f := &mirror.RegulatoryFiling{RegulatoryFiling: records.RegulatoryFiling{
		ID: num, DocumentNumber: num, Type: typ, Subtype: mirror.Trimmed(d.Subtype), Title: strings.TrimSpace(d.Title),
		Abstract: mirror.Trimmed(d.Abstract), Action: mirror.Trimmed(d.Action), PublicationDate: d.PublicationDate,
		FilingYear: pub.Year(), FilingPeriod: "Q" + strconv.Itoa((int(pub.Month())-1)/3+1),
		Citation: mirror.Trimmed(d.Citation), Significant: d.Significant, HTMLURL: mirror.Trimmed(d.HTMLURL), PdfURL: mirror.Trimmed(d.PDFURL),
		Agencies: []records.RegulatoryAgency{}, Rins: []string{}, DocketIDs: []string{},
	}}
	for _, p := range []struct {
		in  *string
		out **string
		n   string
	}{{d.EffectiveOn, &f.EffectiveOn, "effective_on"}, {d.CommentsCloseOn, &f.CommentsCloseOn, "comments_close_on"}} {
		if v := mirror.Trimmed(p.in); v != nil {
			if _, err := time.Parse(time.DateOnly, *v); err != nil {
				return nil, fmt.Errorf("%s: %w", p.n, err)
			}
			*p.out = v
		}
	}
	if c := correctionOf(d.CorrectionOf); c != nil {
		f.CorrectionOf = c
		f.FilingPeriod = "AMENDMENT"
	}
	for _, a := range d.Agencies {
		name := strings.TrimSpace(a.Name)
		if name == "" {
			name = strings.TrimSpace(a.RawName)
		}
		if name == "" {
			continue
		}
		ra := records.RegulatoryAgency{Name: name, Slug: mirror.Trimmed(a.Slug)}
		if a.ID != nil {
			s := a.ID.String()
			ra.AgencyID = &s
		}
		if a.ParentID != nil {
			s := a.ParentID.String()
			ra.ParentAgencyID = &s
		}
		f.Agencies = append(f.Agencies, ra)
	}
	if len(f.Agencies) > 0 {
		f.AgencyID, f.AgencyName = f.Agencies[0].AgencyID, &f.Agencies[0].Name
	}
	f.Rins = clean(d.RINs, nil)
	f.DocketIDs = clean(d.DocketIDs, normalizeDocket)
	src := mirror.Trimmed(d.JSONURL)
	if src == nil {
		src = f.HTMLURL
	}
	f.SourceURL = src
	return f, nil
}

// correctionOf accepts the document number of the corrected document, or an object carrying one.
func correctionOf(raw json.RawMessage) *string {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return mirror.Trimmed(&s)
	}
	var o struct {
		DocumentNumber string `json:"document_number"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return mirror.Trimmed(&o.DocumentNumber)
	}
	return nil
}

// normalizeDocket drops a "Docket No." / "Docket Nos." / "Docket ID" prefix.
func normalizeDocket(s string) string {
	l := strings.ToLower(s)
	for _, p := range []string{"docket nos.", "docket no.", "docket number", "docket id no.", "docket id"} {
		if strings.HasPrefix(l, p) {
			return strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(s[len(p):]), ":"))
		}
	}
	return s
}

func clean(in []string, f func(string) string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, s := range in {
		s = strings.TrimSpace(s)
		if f != nil {
			s = f(s)
		}
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
