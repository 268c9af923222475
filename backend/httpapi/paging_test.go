package httpapi_test

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// insertBills inserts n bills of congress 118 (type hr, numbers from start), with repeated and NULL dates.
func (e *env) insertBills(start, n int) {
	e.t.Helper()
	e.exec(`INSERT INTO bills (id, congress, type, number, official_title, introduced_date, committee_names)
		SELECT 'hr' || g || '-118', 118, 'hr', g, 'Generated bill ' || g,
		       CASE WHEN g % 7 = 0 THEN NULL ELSE DATE '2023-01-01' + (g % 11) END, 'Ways and Means Committee'
		FROM generate_series($1::int, $2::int) AS g`, start, start+n-1)
}

const billsIDsQuery = `query($in: BillsInput) { bills(input: $in) { items { id introducedDate } nextCursor } }`

func TestLimitDefaultAndBounds(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.insertBills(1, 130)
	if p := e.list("bills", billsIDsQuery, nil); len(p.Items) != 25 || p.NextCursor == nil {
		t.Fatalf("default page: %d items, next %v", len(p.Items), p.NextCursor)
	}
	for _, n := range []int{1, 100} {
		if p := e.list("bills", billsIDsQuery, map[string]any{"in": map[string]any{"limit": n}}); len(p.Items) != n {
			t.Fatalf("limit %d: %d items", n, len(p.Items))
		}
	}
	for _, field := range []string{"bills", "members", "regulatoryFilings", "lobbyingDisclosures"} {
		for _, n := range []int{0, 101} {
			q := fmt.Sprintf(`{ %s(input: {limit: %d}) { nextCursor } }`, field, n)
			r := e.gql(q, nil)
			assertBadUserInput(t, r, field)
		}
	}
	assertBadUserInput(t, e.gql(`{ federalBudgets(input: {dataset: OUTLAYS, limit: 0}) { nextCursor } }`, nil), "federalBudgets")
}

func assertBadUserInput(t *testing.T, r gqlResponse, field string) {
	t.Helper()
	if r.Data != nil {
		t.Fatalf("%s: data = %v, want null", field, r.Data)
	}
	if len(r.Errors) != 1 || r.Errors[0].Extensions["code"] != "BAD_USER_INPUT" {
		t.Fatalf("%s: errors = %+v", field, r.Errors)
	}
	if len(r.Errors[0].Path) == 0 || r.Errors[0].Path[0] != field {
		t.Fatalf("%s: path = %v", field, r.Errors[0].Path)
	}
}

// walk follows nextCursor to the end and returns every id in order.
func (e *env) walk(in map[string]any, between func(page int)) []string {
	e.t.Helper()
	var all []string
	in = copyMap(in)
	for page := 0; page < 1000; page++ {
		p := e.list("bills", billsIDsQuery, map[string]any{"in": in})
		all = append(all, ids(p, "id")...)
		if p.NextCursor == nil {
			return all
		}
		if between != nil {
			between(page)
		}
		in["cursor"] = *p.NextCursor
	}
	e.t.Fatal("walk did not end")
	return nil
}

func copyMap(m map[string]any) map[string]any {
	c := map[string]any{}
	for k, v := range m {
		c[k] = v
	}
	return c
}

func TestWalkReturnsEveryRecordOnceIncludingNullDates(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.insertBills(1, 103)
	e.exec(`INSERT INTO bills (id, congress, type, number, official_title, committee_names) VALUES ('s1-117', 117, 's', 1, 'Other congress', '')`)
	got := e.walk(map[string]any{"congress": 118, "limit": 10}, nil)
	if len(got) != 103 {
		t.Fatalf("walk returned %d ids, want 103", len(got))
	}
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			t.Fatalf("%s returned twice", id)
		}
		seen[id] = true
	}
	// Order: dates descending, NULL dates (multiples of 7) last, ids descending within a date.
	want := e.idsInSQLOrder(`SELECT id FROM bills WHERE congress = 118 ORDER BY introduced_date DESC NULLS LAST, id DESC`)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("walk order differs from SQL order\n got %v\nwant %v", got, want)
	}
	if !strings.HasPrefix(got[len(got)-1], "hr") || !seen["hr7-118"] {
		t.Fatal("null-dated bills missing")
	}
}

func (e *env) idsInSQLOrder(sql string) []string {
	e.t.Helper()
	rows, err := e.pool.Query(bg(), sql)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

func TestWalkWhileRowsAreInserted(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.insertBills(1, 80)
	before := map[string]bool{}
	for _, id := range e.idsInSQLOrder(`SELECT id FROM bills`) {
		before[id] = true
	}
	next := 1000
	got := e.walk(map[string]any{"limit": 7}, func(page int) {
		// Insert rows that sort before, inside and after the current position, including NULL dates.
		e.insertBills(next, 5)
		next += 5
	})
	count := map[string]int{}
	for _, id := range got {
		count[id]++
	}
	for id, n := range count {
		if n > 1 {
			t.Fatalf("%s returned %d times", id, n)
		}
	}
	for id := range before {
		if count[id] != 1 {
			t.Fatalf("%s present for the whole walk but returned %d times", id, count[id])
		}
	}
}

func TestCursorTamperedOrReusedIsRefused(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.insertBills(1, 30)
	p := e.list("bills", billsIDsQuery, map[string]any{"in": map[string]any{"congress": 118, "limit": 5}})
	c := *p.NextCursor
	if strings.ContainsAny(c, "+/=") {
		t.Fatalf("cursor not URL-safe: %s", c)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(c)
	raw[len(raw)/2] ^= 1
	tampered := base64.RawURLEncoding.EncodeToString(raw)
	for name, in := range map[string]map[string]any{
		"tampered":      {"congress": 118, "limit": 5, "cursor": tampered},
		"garbage":       {"congress": 118, "cursor": "%%%not-base64"},
		"other filters": {"congress": 117, "limit": 5, "cursor": c},
		"filter added":  {"congress": 118, "type": "hr", "limit": 5, "cursor": c},
	} {
		r := e.gql(billsIDsQuery, map[string]any{"in": in})
		t.Run(name, func(t *testing.T) { assertBadUserInput(t, r, "bills") })
	}
	// A bills cursor is not a members cursor.
	assertBadUserInput(t, e.gql(`query($c: String) { members(input: {cursor: $c}) { nextCursor } }`, map[string]any{"c": c}), "members")
	// The same cursor with a different limit is fine (limit is not a filter).
	if p2 := e.list("bills", billsIDsQuery, map[string]any{"in": map[string]any{"congress": 118, "limit": 3, "cursor": c}}); len(p2.Items) != 3 {
		t.Fatalf("cursor with other limit: %d items", len(p2.Items))
	}
	status, body := e.getBills(url.Values{"congress": {"117"}, "cursor": {c}})
	if status != 400 || !strings.Contains(string(body), `"errors":[{"message":"parameter \"cursor\"`) {
		t.Fatalf("GET /bills reused cursor = %d %s", status, body)
	}
}
