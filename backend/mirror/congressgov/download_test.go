package congressgov_test

import (
	"context"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/backend/migrations/migratedtest"
	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/backend/mirror/congressgov"
)

// TestDownloadedFolder: a folder as a user downloads it from Congress.gov — a bill in its own subfolder with
// _actions, _cosponsors, _text and _summaries files beside _committees, no _titles, and two list pages that
// both list s7 — imports with the default flags: the four sub-resource files are skipped with a note each,
// the two bills whose officialTitle is not an official title are noted, s7's second listing is a duplicate,
// and read = created + updated + unchanged + duplicate + malformed.
func TestDownloadedFolder(t *testing.T) {
	pool := migratedtest.Pool(t)
	items, err := congressgov.ParseFiles("testdata/download")
	if err != nil {
		t.Fatal(err)
	}
	var notices []string
	st, err := mirror.New(pool).Run(context.Background(), &mirror.ItemsSource{Fam: mirror.Bills, Src: congressgov.SourceName, Items: items},
		mirror.Options{Notice: func(pos, kind, note string) { notices = append(notices, kind+" "+pos) }})
	if err != nil {
		t.Fatal(err)
	}
	if st.Read != 3 || st.Created != 2 || st.Duplicate != 1 || st.Malformed != 0 ||
		st.Read != st.Created+st.Updated+st.Unchanged+st.Duplicate+st.Malformed {
		t.Fatalf("%+v", st)
	}
	if st.Notes[congressgov.SkippedFile] != 4 || st.Notes[congressgov.TitleFallback] != 3 {
		t.Fatalf("notes %v", st.Notes)
	}
	want := []string{
		"title_fallback bill_118_hr_200.json",
		"skipped_file bill_118_hr_200_actions.json",
		"skipped_file bill_118_hr_200_cosponsors.json",
		"skipped_file bill_118_hr_200_summaries.json",
		"skipped_file bill_118_hr_200_text.json",
		"title_fallback bill_118.json bills[1]",
		"title_fallback bill_118_offset_2.json bills[0]",
	}
	if strings.Join(notices, "\n") != strings.Join(want, "\n") {
		t.Fatalf("notices\n%s\nwant\n%s", strings.Join(notices, "\n"), strings.Join(want, "\n"))
	}
	var title, committees string
	if err := pool.QueryRow(context.Background(), `SELECT official_title, committee_names FROM bills WHERE id = 'hr200-118'`).Scan(&title, &committees); err != nil {
		t.Fatal(err)
	}
	if title != "Synthetic Harbors Act" || committees != "Transportation and Infrastructure Committee" {
		t.Fatalf("%q %q", title, committees)
	}
}
