package legislators_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/backend/migrations/migratedtest"
	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/backend/mirror/legislators"
	"github.com/jackc/pgx/v5/pgxpool"
)

func importFile(t *testing.T, pool *pgxpool.Pool, path string, opt mirror.Options) (mirror.Stats, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	items, err := legislators.Parse(f, legislators.Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	src := &mirror.ItemsSource{Fam: mirror.Members, Src: legislators.SourceName, Items: items, BatchSize: 2}
	return mirror.New(pool).Run(context.Background(), src, opt)
}

type event struct {
	Record  string
	Type    string
	Changed []string
}

func events(t *testing.T, pool *pgxpool.Pool) []event {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT record_id, type, changed_fields FROM change_events WHERE family = 'members' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []event
	for rows.Next() {
		var e event
		if err := rows.Scan(&e.Record, &e.Type, &e.Changed); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func TestCongressOn(t *testing.T) {
	cases := map[string]int{"1789-03-04": 1, "2025-01-03": 119, "2025-01-02": 118, "2027-01-02": 119, "2026-12-31": 119, "2024-01-01": 118}
	for d, want := range cases {
		day, _ := time.Parse(time.DateOnly, d)
		if got := legislators.CongressOn(day); got != want {
			t.Errorf("CongressOn(%s) = %d, want %d", d, got, want)
		}
	}
}

func TestMapsEveryField(t *testing.T) {
	pool := migratedtest.Pool(t)
	ctx := context.Background()
	st, err := importFile(t, pool, "testdata/legislators.yaml", mirror.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Created != 2 || st.Updated != 0 || st.Malformed != 0 {
		t.Fatalf("stats %+v", st)
	}
	var name, state string
	var synced time.Time
	if err := pool.QueryRow(ctx, `SELECT name, state, last_synced_at FROM members WHERE member_id = 'Z000001' AND bioguide_id = 'Z000001' AND deleted_at IS NULL`).Scan(&name, &state, &synced); err != nil {
		t.Fatal(err)
	}
	if name != "Ada Q. Zimmer" || state != "OH" || time.Since(synced) > time.Minute {
		t.Fatalf("member %q %q %v", name, state, synced)
	}
	rows, err := pool.Query(ctx, `SELECT member_id, congress, chamber, coalesce(party,''), coalesce(state,''), coalesce(district, -1)
		FROM member_terms ORDER BY member_id, congress, chamber`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var id, chamber, party, st string
		var c, d int
		if err := rows.Scan(&id, &c, &chamber, &party, &st, &d); err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.Join([]string{id, itoa(c), chamber, party, st, itoa(d)}, " "))
	}
	want := []string{
		"Z000001 116 house Democrat OH 7",
		"Z000001 117 senate Independent OH -1",
		"Z000001 118 senate Independent OH -1",
		"Z000001 119 senate Independent OH -1",
		"Z000002 119 house Republican AK 0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("terms:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// First+last name when official_full is absent.
	if err := pool.QueryRow(ctx, `SELECT name FROM members WHERE member_id = 'Z000002'`).Scan(&name); err != nil || name != "Bo Yates" {
		t.Fatalf("name %q %v", name, err)
	}
	ev := events(t, pool)
	if len(ev) != 2 || ev[0].Type != "created" || ev[1].Type != "created" {
		t.Fatalf("events %+v", ev)
	}
	var record string
	if err := pool.QueryRow(ctx, `SELECT record::text FROM change_events WHERE record_id = 'Z000002'`).Scan(&record); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"member_id": "Z000002"`, `"name": "Bo Yates"`, `"chamber": "house"`, `"congress": 119`} {
		if !strings.Contains(record, w) {
			t.Errorf("event record %s lacks %s", record, w)
		}
	}
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func TestReimportIdempotentThenOneUpdate(t *testing.T) {
	pool := migratedtest.Pool(t)
	ctx := context.Background()
	if _, err := importFile(t, pool, "testdata/legislators.yaml", mirror.Options{}); err != nil {
		t.Fatal(err)
	}
	var before time.Time
	if err := pool.QueryRow(ctx, `SELECT last_synced_at FROM members WHERE member_id = 'Z000002'`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	st, err := importFile(t, pool, "testdata/legislators.yaml", mirror.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Unchanged != 2 || st.Created+st.Updated != 0 || len(events(t, pool)) != 2 {
		t.Fatalf("re-import wrote: %+v, events %d", st, len(events(t, pool)))
	}
	// Change one field of one member.
	raw, _ := os.ReadFile("testdata/legislators.yaml")
	changed := strings.Replace(string(raw), "first: Bo", "first: Bob", 1)
	path := filepath.Join(t.TempDir(), "l.yaml")
	if err := os.WriteFile(path, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err = importFile(t, pool, path, mirror.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ev := events(t, pool)
	if st.Updated != 1 || st.Unchanged != 1 || len(ev) != 3 {
		t.Fatalf("stats %+v events %+v", st, ev)
	}
	if last := ev[2]; last.Record != "Z000002" || last.Type != "updated" || strings.Join(last.Changed, ",") != "name" {
		t.Fatalf("update event %+v", last)
	}
	var after time.Time
	var name string
	if err := pool.QueryRow(ctx, `SELECT name, last_synced_at FROM members WHERE member_id = 'Z000002'`).Scan(&name, &after); err != nil {
		t.Fatal(err)
	}
	if name != "Bob Yates" || !after.After(before) {
		t.Fatalf("name %q synced %v (before %v)", name, after, before)
	}
	var untouched time.Time
	if err := pool.QueryRow(ctx, `SELECT last_synced_at FROM members WHERE member_id = 'Z000001'`).Scan(&untouched); err != nil {
		t.Fatal(err)
	}
	if untouched.After(before.Add(time.Second)) && !untouched.Before(after) {
		t.Fatalf("unchanged member got a new last_synced_at %v", untouched)
	}
}

func TestFullSnapshotMarksVanishedDeleted(t *testing.T) {
	pool := migratedtest.Pool(t)
	ctx := context.Background()
	if _, err := importFile(t, pool, "testdata/legislators.yaml", mirror.Options{}); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile("testdata/legislators.yaml")
	cut := string(raw)[:strings.Index(string(raw), "- id:\n    bioguide: Z000002")]
	path := filepath.Join(t.TempDir(), "l.yaml")
	if err := os.WriteFile(path, []byte(cut), 0o600); err != nil {
		t.Fatal(err)
	}
	// Without the flag, absence means nothing.
	if st, err := importFile(t, pool, path, mirror.Options{}); err != nil || st.Deleted != 0 {
		t.Fatalf("%+v %v", st, err)
	}
	st, err := importFile(t, pool, path, mirror.Options{FullSnapshot: true})
	if err != nil {
		t.Fatal(err)
	}
	if st.Deleted != 1 {
		t.Fatalf("stats %+v", st)
	}
	var deleted bool
	if err := pool.QueryRow(ctx, `SELECT deleted_at IS NOT NULL FROM members WHERE member_id = 'Z000002'`).Scan(&deleted); err != nil || !deleted {
		t.Fatalf("deleted %v %v", deleted, err)
	}
	ev := events(t, pool)
	if last := ev[len(ev)-1]; last.Record != "Z000002" || last.Type != "deleted" || len(ev) != 3 {
		t.Fatalf("events %+v", ev)
	}
	// A second full snapshot deletes nothing more; re-adding it is a "created" event.
	if st, err := importFile(t, pool, path, mirror.Options{FullSnapshot: true}); err != nil || st.Deleted != 0 {
		t.Fatalf("%+v %v", st, err)
	}
	if st, err := importFile(t, pool, "testdata/legislators.yaml", mirror.Options{}); err != nil || st.Created != 1 {
		t.Fatalf("%+v %v", st, err)
	}
	if err := pool.QueryRow(ctx, `SELECT deleted_at IS NOT NULL FROM members WHERE member_id = 'Z000002'`).Scan(&deleted); err != nil || deleted {
		t.Fatalf("still deleted %v %v", deleted, err)
	}
}

func TestMalformedStopAndSkip(t *testing.T) {
	pool := migratedtest.Pool(t)
	ctx := context.Background()
	var reported []string
	opt := mirror.Options{OnError: mirror.OnErrorStop, Report: func(pos string, err error) { reported = append(reported, pos+": "+err.Error()) }}
	_, err := importFile(t, pool, "testdata/malformed.yaml", opt)
	var me *mirror.MalformedError
	if !asMalformed(err, &me) || me.Pos != "line 12 (legislator 1)" {
		t.Fatalf("err %v", err)
	}
	var n int
	// Batch size 2: the good first record shares the chunk with the bad one, so nothing was committed.
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM members`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("members after stop: %d %v", n, err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM change_events`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("events after stop: %d %v", n, err)
	}
	reported = nil
	opt.OnError = mirror.OnErrorSkip
	st, err := importFile(t, pool, "testdata/malformed.yaml", opt)
	if err != nil {
		t.Fatal(err)
	}
	if st.Created != 2 || st.Malformed != 1 || len(reported) != 1 || !strings.Contains(reported[0], `line 12`) || !strings.Contains(reported[0], `"governor"`) {
		t.Fatalf("stats %+v reported %q", st, reported)
	}
	// 2025–2031 Senate term, read in the 119th Congress: only the 119th has met (docs/design.md D33).
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM member_terms WHERE member_id = 'Z000005'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("senate terms %d %v", n, err)
	}
}

func asMalformed(err error, target **mirror.MalformedError) bool {
	me, ok := err.(*mirror.MalformedError)
	if ok {
		*target = me
	}
	return ok
}
