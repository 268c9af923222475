package fedreg_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/backend/migrations/migratedtest"
	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/backend/mirror/fedreg"
	"github.com/civicgate/civicgate/backend/mirror/fetch"
	"github.com/civicgate/civicgate/backend/mirror/pager"
)

func load(t *testing.T, path string) []mirror.Item {
	t.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := fedreg.Decode(body, 1)
	if err != nil {
		t.Fatal(err)
	}
	return p.Items
}

func TestMapsEveryField(t *testing.T) {
	pool := migratedtest.Pool(t)
	ctx := context.Background()
	items := load(t, "testdata/documents.json")
	st, err := mirror.New(pool).Run(ctx, &mirror.ItemsSource{Fam: mirror.RegulatoryFilings, Src: fedreg.SourceName, Items: items}, mirror.Options{})
	if err != nil || st.Created != 3 {
		t.Fatalf("%+v %v", st, err)
	}
	var got string
	if err := pool.QueryRow(ctx, `SELECT concat_ws('|', document_number, type, coalesce(subtype,'-'), title, abstract, action, agency_id,
		agency_name, agencies::text, array_to_string(agency_ids, ','), array_to_string(agency_names, ','), publication_date, filing_year,
		filing_period, coalesce(correction_of,'-'), effective_on, coalesce(comments_close_on::text,'-'), array_to_string(rins, ','),
		array_to_string(docket_ids, ','), citation, significant, html_url, pdf_url, source_url)
		FROM regulatory_filings WHERE id = '2026-90001'`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	want := `2026-90001|RULE|-|Air Plan Approval; Synthetic State; Ozone|The EPA approves a synthetic plan.|Final rule.|145|Environmental Protection Agency|` +
		`[{"name": "Environmental Protection Agency", "slug": "environmental-protection-agency", "agency_id": "145", "parent_agency_id": null}, {"name": "Office of Air", "slug": "office-of-air", "agency_id": "9001", "parent_agency_id": "145"}]|` +
		`145,9001|Environmental Protection Agency,Office of Air|2026-05-14|2026|Q2|-|2026-06-15|-|2060-AV12|EPA-R05-OAR-2026-0001,EPA-HQ-OAR-2026-0002|91 FR 9001|f|` +
		`https://www.federalregister.gov/documents/2026/05/14/2026-90001/air-plan-approval|https://www.govinfo.gov/content/pkg/FR-2026-05-14/pdf/2026-90001.pdf|https://www.federalregister.gov/api/v1/documents/2026-90001.json`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	var typ, subtype, period, src string
	if err := pool.QueryRow(ctx, `SELECT type, subtype, filing_period, source_url FROM regulatory_filings WHERE id = '2026-90002'`).Scan(&typ, &subtype, &period, &src); err != nil {
		t.Fatal(err)
	}
	if typ != "PRESIDENTIAL_DOCUMENT" || subtype != "Executive Order" || period != "Q4" || !strings.HasPrefix(src, "https://www.federalregister.gov/documents/") {
		t.Fatalf("2026-90002: %s %s %s %s", typ, subtype, period, src)
	}
	var corr, agency, rins, dockets string
	if err := pool.QueryRow(ctx, `SELECT type || ' ' || filing_period, correction_of, agency_name, array_to_string(rins, ','), array_to_string(docket_ids, ',')
		FROM regulatory_filings WHERE id = '2026-90003'`).Scan(&typ, &corr, &agency, &rins, &dockets); err != nil {
		t.Fatal(err)
	}
	if typ != "PROPOSED_RULE AMENDMENT" || corr != "2026-80000" || agency != "National Oceanic and Atmospheric Administration" || rins != "0648-BM11" || dockets != "260101-0001" {
		t.Fatalf("2026-90003: %s %s %s %s %s", typ, corr, agency, rins, dockets)
	}
	if st, err := mirror.New(pool).Run(ctx, &mirror.ItemsSource{Fam: mirror.RegulatoryFilings, Src: fedreg.SourceName, Items: load(t, "testdata/documents.json")}, mirror.Options{}); err != nil || st.Unchanged != 3 {
		t.Fatalf("re-import %+v %v", st, err)
	}
}

func TestMalformedPositions(t *testing.T) {
	items := load(t, "testdata/malformed.json")
	if len(items) != 3 || items[0].Err != nil || items[1].Err == nil || items[2].Err == nil {
		t.Fatalf("%+v", items)
	}
	if items[1].Pos != "results[1] of page 1" || !strings.Contains(items[1].Err.Error(), "Uncategorized Document") {
		t.Fatalf("%s: %v", items[1].Pos, items[1].Err)
	}
}

// Pages through per_page/page and stops at next_page_url = null; a changed title is one updated event.
func TestAPIPaging(t *testing.T) {
	pool := migratedtest.Pool(t)
	ctx := context.Background()
	title := "Notice %d"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
		if r.URL.Query().Get("conditions[type][]") != "NOTICE" {
			http.Error(w, "filter lost", http.StatusBadRequest)
			return
		}
		var res []map[string]any
		for i := (page - 1) * per; i < min(page*per, 7); i++ {
			res = append(res, map[string]any{"document_number": "2026-0" + strconv.Itoa(1000+i), "type": "Notice",
				"title": strings.Replace(title, "%d", strconv.Itoa(i), 1), "publication_date": "2026-03-01", "agencies": []any{}})
		}
		var next any
		if page*per < 7 {
			next = "https://www.federalregister.gov/api/v1/documents.json?page=" + strconv.Itoa(page+1)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"count": 7, "total_pages": 3, "next_page_url": next, "results": res})
	}))
	defer srv.Close()
	run := func() mirror.Stats {
		base := srv.URL + "/api/v1/documents.json?conditions[type][]=NOTICE"
		src, err := pager.New(pager.Source{Fam: mirror.RegulatoryFilings, Src: fedreg.SourceName, BaseURL: base,
			Client: &fetch.Client{MaxAttempts: 2, BaseDelay: time.Millisecond}, PageParam: "page", SizeParam: "per_page", Size: 3, Decode: fedreg.Decode}, "")
		if err != nil {
			t.Fatal(err)
		}
		st, err := mirror.New(pool).Run(ctx, src, mirror.Options{BaseURL: base})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := run(); st.Created != 7 || st.Chunks != 3 {
		t.Fatalf("%+v", st)
	}
	title = "Notice %d"
	if st := run(); st.Unchanged != 7 {
		t.Fatalf("%+v", st)
	}
	title = "Renamed notice %d"
	if st := run(); st.Updated != 7 {
		t.Fatalf("%+v", st)
	}
	var fields []string
	if err := pool.QueryRow(ctx, `SELECT changed_fields FROM change_events WHERE type = 'updated' LIMIT 1`).Scan(&fields); err != nil || strings.Join(fields, ",") != "title" {
		t.Fatalf("%v %v", fields, err)
	}
}
