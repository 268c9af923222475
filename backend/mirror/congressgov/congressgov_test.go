package congressgov_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/civicgate/civicgate/backend/migrations/migratedtest"
	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/backend/mirror/congressgov"
	"github.com/civicgate/civicgate/backend/mirror/fetch"
	"github.com/jackc/pgx/v5/pgxpool"
)

func importDir(t *testing.T, pool *pgxpool.Pool, path string) mirror.Stats {
	t.Helper()
	items, err := congressgov.ParseFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := mirror.New(pool).Run(context.Background(), &mirror.ItemsSource{Fam: mirror.Bills, Src: congressgov.SourceName, Items: items}, mirror.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestFilesMapEveryField(t *testing.T) {
	pool := migratedtest.Pool(t)
	st := importDir(t, pool, "testdata/basic")
	if st.Created != 2 || st.Malformed != 0 {
		t.Fatalf("stats %+v", st)
	}
	var got [11]*string
	row := pool.QueryRow(context.Background(), `SELECT congress::text, type, number::text, official_title, introduced_date::text,
		member_name, member_bioguide_id, member_by_congress_key, committee_names, source_url, (last_synced_at > now() - interval '1 minute')::text
		FROM bills WHERE id = 'hr100-118'`)
	ptrs := make([]any, len(got))
	for i := range got {
		ptrs[i] = &got[i]
	}
	if err := row.Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	want := []string{"118", "hr", "100", "To establish synthetic parks, and for other purposes.", "2023-01-09",
		"Rep. Zimmer, Ada Q. [D-OH-7]", "Z000001", "Z000001:118", "Natural Resources Committee; Ways and Means Committee",
		"https://www.congress.gov/bill/118th-congress/house-bill/100", "true"}
	for i, w := range want {
		if got[i] == nil || *got[i] != w {
			t.Errorf("column %d = %v, want %q", i, deref(got[i]), w)
		}
	}
	// A listed bill without a detail file: its list title, no sponsor.
	var title, src string
	var sponsor *string
	if err := pool.QueryRow(context.Background(), `SELECT official_title, member_name, source_url FROM bills WHERE id = 'sres5-118'`).Scan(&title, &sponsor, &src); err != nil {
		t.Fatal(err)
	}
	if title != "Synthetic Rivers Resolution" || sponsor != nil || src != "https://www.congress.gov/bill/118th-congress/senate-resolution/5" {
		t.Fatalf("list-only bill %q %v %q", title, sponsor, src)
	}
	var rec string
	if err := pool.QueryRow(context.Background(), `SELECT record::text FROM change_events WHERE record_id = 'hr100-118'`).Scan(&rec); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"officialTitle": "To establish synthetic parks`, `"memberByCongressKey": "Z000001:118"`, `"lastSyncedAt": "`} {
		if !strings.Contains(rec, w) {
			t.Errorf("record %s lacks %s", rec, w)
		}
	}
	// Re-import: nothing written.
	if st := importDir(t, pool, "testdata/basic"); st.Unchanged != 2 || st.Created+st.Updated != 0 {
		t.Fatalf("re-import %+v", st)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// fakeAPI serves n synthetic bills (hr1..hrN of the 118th) as Congress.gov list pages and details.
type fakeAPI struct {
	n         int
	failAfter atomic.Int64 // detail requests answered before every request fails with 503 (0 = never)
	details   atomic.Int64
	keys      atomic.Int64 // requests that carried the API key
	throttled atomic.Bool  // first list request answered 429 once
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("api_key") == "secret-key" {
		f.keys.Add(1)
	}
	if lim := f.failAfter.Load(); lim > 0 && f.details.Load() >= lim {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	p := strings.Trim(strings.TrimPrefix(r.URL.Path, "/v3/bill"), "/")
	w.Header().Set("Content-Type", "application/json")
	switch {
	case p == "":
		if f.throttled.CompareAndSwap(false, true) {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		off, _ := strconv.Atoi(r.URL.Query().Get("offset"))
		lim, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		var bills []map[string]any
		for i := off; i < min(off+lim, f.n); i++ {
			bills = append(bills, map[string]any{"congress": 118, "number": strconv.Itoa(i + 1), "type": "HR", "title": fmt.Sprintf("Bill %d", i+1),
				"url": fmt.Sprintf("https://api.congress.gov/v3/bill/118/hr/%d?format=json", i+1)})
		}
		next := ""
		if off+lim < f.n {
			next = "https://api.congress.gov/v3/bill?offset=" + strconv.Itoa(off+lim)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"bills": bills, "pagination": map[string]any{"count": f.n, "next": next}})
	case strings.HasSuffix(p, "/committees"):
		_, _ = w.Write([]byte(`{"committees":[{"name":"Budget Committee","chamber":"House"}]}`))
	case strings.HasSuffix(p, "/titles"):
		num := strings.Split(p, "/")[2]
		_, _ = fmt.Fprintf(w, `{"titles":[{"title":"To do thing %s.","titleType":"Official Title as Introduced"}]}`, num)
	default:
		parts := strings.Split(p, "/")
		if len(parts) != 3 {
			http.NotFound(w, r)
			return
		}
		f.details.Add(1)
		_, _ = fmt.Fprintf(w, `{"bill":{"congress":118,"type":"HR","number":%q,"title":"Bill %s","introducedDate":"2023-02-0%d",
			"sponsors":[{"bioguideId":"B%06s","fullName":"Rep. Sponsor %s"}],"committees":{"count":1},"titles":{"count":1}}}`,
			parts[2], parts[2], 1+len(parts[2])%9, parts[2], parts[2])
	}
}

func TestAPIPagesResumesAfterInterruption(t *testing.T) {
	pool := migratedtest.Pool(t)
	ctx := context.Background()
	api := &fakeAPI{n: 23}
	api.failAfter.Store(12) // dies in the middle of the third page (pages of 5)
	srv := httptest.NewServer(api)
	defer srv.Close()
	base := srv.URL + "/v3/bill"
	client := &fetch.Client{Key: "secret-key", KeyParam: "api_key", MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}
	eng := mirror.New(pool)
	run := func() (mirror.Stats, error) {
		cur, err := eng.LoadCursor(ctx, mirror.Bills, congressgov.SourceName, base)
		if err != nil {
			t.Fatal(err)
		}
		src, err := congressgov.NewAPI(client, base, cur, 5)
		if err != nil {
			t.Fatal(err)
		}
		return eng.Run(ctx, src, mirror.Options{BaseURL: base, Resumed: cur != ""})
	}
	st, err := run()
	if err == nil || !strings.Contains(err.Error(), "503") || strings.Contains(err.Error(), "secret-key") {
		t.Fatalf("interrupted run: %+v %v", st, err)
	}
	if st.Created != 10 {
		t.Fatalf("committed before the failure: %+v", st)
	}
	cur, _ := eng.LoadCursor(ctx, mirror.Bills, congressgov.SourceName, base)
	if cur != "10" {
		t.Fatalf("cursor %q", cur)
	}
	api.failAfter.Store(0)
	st, err = run()
	if err != nil {
		t.Fatal(err)
	}
	if st.Created != 13 || st.Unchanged != 0 {
		t.Fatalf("resumed run: %+v", st)
	}
	var rows, events, distinct int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM bills), (SELECT count(*) FROM change_events), (SELECT count(DISTINCT record_id) FROM change_events)`).Scan(&rows, &events, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != 23 || events != 23 || distinct != 23 {
		t.Fatalf("rows %d events %d distinct %d", rows, events, distinct)
	}
	if cur, _ := eng.LoadCursor(ctx, mirror.Bills, congressgov.SourceName, base); cur != "" {
		t.Fatalf("cursor left after a complete run: %q", cur)
	}
	var title, key, committees string
	if err := pool.QueryRow(ctx, `SELECT official_title, member_by_congress_key, committee_names FROM bills WHERE id = 'hr17-118'`).Scan(&title, &key, &committees); err != nil {
		t.Fatal(err)
	}
	if title != "To do thing 17." || key != "B000017:118" || committees != "Budget Committee" {
		t.Fatalf("hr17-118: %q %q %q", title, key, committees)
	}
	if !api.throttled.Load() || api.keys.Load() == 0 {
		t.Fatal("429 not exercised or key not sent")
	}
	// A full re-run from the start changes nothing.
	st, err = run()
	if err != nil || st.Unchanged != 23 || st.Created+st.Updated != 0 {
		t.Fatalf("re-run %+v %v", st, err)
	}
}

// A --full-snapshot run that is interrupted and resumed deletes exactly the bills upstream no longer lists
// (not the ones the interrupted part listed).
func TestFullSnapshotAcrossResume(t *testing.T) {
	pool := migratedtest.Pool(t)
	ctx := context.Background()
	api := &fakeAPI{n: 12}
	api.throttled.Store(true)
	srv := httptest.NewServer(api)
	defer srv.Close()
	base := srv.URL + "/v3/bill"
	client := &fetch.Client{MaxAttempts: 2, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}
	eng := mirror.New(pool)
	run := func(full bool) (mirror.Stats, error) {
		cur, err := eng.LoadCursor(ctx, mirror.Bills, congressgov.SourceName, base)
		if err != nil {
			t.Fatal(err)
		}
		src, err := congressgov.NewAPI(client, base, cur, 4)
		if err != nil {
			t.Fatal(err)
		}
		return eng.Run(ctx, src, mirror.Options{BaseURL: base, Resumed: cur != "", FullSnapshot: full})
	}
	if st, err := run(false); err != nil || st.Created != 12 {
		t.Fatalf("%+v %v", st, err)
	}
	api.n = 10 // hr11, hr12 vanished upstream
	api.details.Store(0)
	api.failAfter.Store(6) // dies on the second page
	if st, err := run(true); err == nil || st.Deleted != 0 {
		t.Fatalf("interrupted: %+v %v", st, err)
	}
	api.failAfter.Store(0)
	st, err := run(true)
	if err != nil || st.Deleted != 2 {
		t.Fatalf("resumed: %+v %v", st, err)
	}
	rows, err := pool.Query(ctx, `SELECT record_id FROM change_events WHERE type = 'deleted' ORDER BY record_id`)
	if err != nil {
		t.Fatal(err)
	}
	var gone []string
	for rows.Next() {
		var id string
		_ = rows.Scan(&id)
		gone = append(gone, id)
	}
	if strings.Join(gone, ",") != "hr11-118,hr12-118" {
		t.Fatalf("deleted %v", gone)
	}
	var live int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM bills WHERE deleted_at IS NULL`).Scan(&live); err != nil || live != 10 {
		t.Fatalf("live %d %v", live, err)
	}
}
