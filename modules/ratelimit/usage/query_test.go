package usage

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// seedQuery issues two keys of acme and one of other, and writes usage for
// them (and for a keys-file organization unknown to the database) relative to
// now. It returns acme's id and key ids.
func seedQuery(t *testing.T, pool *pgxpool.Pool, now time.Time) (org string, k1, k2 string) {
	t.Helper()
	ctx := context.Background()
	a1, err := keystore.Issue(ctx, pool, "acme", "free", "live")
	if err != nil {
		t.Fatal(err)
	}
	a2, err := keystore.Issue(ctx, pool, "acme", "free", "test")
	if err != nil {
		t.Fatal(err)
	}
	o, err := keystore.Issue(ctx, pool, "other", "free", "live")
	if err != nil {
		t.Fatal(err)
	}
	rows := []Row{
		{KeyID: a1.ID, OrgID: a1.OrgID, Start: now.Add(-10 * time.Minute), Delta: Delta{Admitted: 1}},
		{KeyID: a1.ID, OrgID: a1.OrgID, Start: now.Add(-10 * time.Minute).Add(30 * time.Second), Delta: Delta{Admitted: 1}},
		{KeyID: a2.ID, OrgID: a2.OrgID, Start: now.Add(-10 * time.Minute), Delta: Delta{Refused: 1}},
		{KeyID: a1.ID, OrgID: a1.OrgID, Start: now.Add(-90 * time.Minute), Delta: Delta{Admitted: 10}},
		{KeyID: a1.ID, OrgID: a1.OrgID, Start: now.Add(-5 * time.Hour), Delta: Delta{Admitted: 100}},
		{KeyID: a2.ID, OrgID: a2.OrgID, Start: now.Add(-30 * time.Hour), Delta: Delta{Cost: 1000}},
		{KeyID: o.ID, OrgID: o.OrgID, Start: now.Add(-10 * time.Minute), Delta: Delta{Admitted: 7}},
		{KeyID: "key_file", OrgID: "org_from_file", Start: now.Add(-10 * time.Minute), Delta: Delta{Admitted: 3}},
		{KeyID: a1.ID, OrgID: a1.OrgID, Start: now.Add(time.Hour), Delta: Delta{Admitted: 1 << 20}}, // after now: never returned
	}
	if err := Write(ctx, pool, rows); err != nil {
		t.Fatal(err)
	}
	return a1.OrgID, a1.ID, a2.ID
}

func TestQuery(t *testing.T) {
	pool := newPool(t, migratedDB(t))
	ctx := context.Background()
	now := t0.Add(25 * time.Minute) // 12:25
	org, k1, k2 := seedQuery(t, pool, now)

	check := func(name string, q QueryArgs, want []Row) {
		t.Helper()
		q.Now = now
		got, err := Query(ctx, pool, q)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.EqualFunc(got, want, func(a, b Row) bool {
			return a.KeyID == b.KeyID && a.OrgID == b.OrgID && a.Start.Equal(b.Start) && a.Delta == b.Delta
		}) {
			t.Fatalf("%s:\n got %+v\nwant %+v", name, got, want)
		}
	}
	minute := func(key string, at time.Time, d Delta) Row {
		return Row{KeyID: key, OrgID: org, Start: at.Truncate(time.Minute), Delta: d}
	}
	hour := func(key string, at time.Time, d Delta) Row {
		return Row{KeyID: key, OrgID: org, Start: at.Truncate(time.Hour), Delta: d}
	}
	// Keys sort by id within a start; k1 and k2 are random ids.
	pair := []Row{minute(k1, now.Add(-10*time.Minute), Delta{Admitted: 2}), minute(k2, now.Add(-10*time.Minute), Delta{Refused: 1})}
	if k2 < k1 {
		pair[0], pair[1] = pair[1], pair[0]
	}

	// By name and by id; Since <= 2h defaults to minutes.
	check("by name, 1h", QueryArgs{Org: "acme", Since: time.Hour}, pair)
	check("by id, 1h", QueryArgs{Org: org, Since: time.Hour}, pair)
	check("2h", QueryArgs{Org: "acme", Since: 2 * time.Hour},
		append([]Row{minute(k1, now.Add(-90*time.Minute), Delta{Admitted: 10})}, pair...))
	check("key filter", QueryArgs{Org: "acme", KeyID: k2, Since: time.Hour}, pair[slices.IndexFunc(pair, func(r Row) bool { return r.KeyID == k2 }):][:1])

	// Longer: hours. 24 h back from 12:25 includes the 12:00 hour of the day before.
	hourPair := []Row{hour(k1, now, Delta{Admitted: 2}), hour(k2, now, Delta{Refused: 1})}
	if k2 < k1 {
		hourPair[0], hourPair[1] = hourPair[1], hourPair[0]
	}
	check("24h", QueryArgs{Org: "acme", Since: 24 * time.Hour}, append([]Row{
		hour(k1, now.Add(-5*time.Hour), Delta{Admitted: 100}),
		hour(k1, now.Add(-90*time.Minute), Delta{Admitted: 10}),
	}, hourPair...))
	check("48h by hour, one key", QueryArgs{Org: "acme", KeyID: k2, Since: 48 * time.Hour, By: ByHour}, []Row{
		hour(k2, now.Add(-30*time.Hour), Delta{Cost: 1000}),
		hour(k2, now, Delta{Refused: 1}),
	})
	check("30m by hour", QueryArgs{Org: "acme", Since: 30 * time.Minute, By: ByHour}, hourPair)
	check("48h by minute", QueryArgs{Org: "acme", KeyID: k2, Since: 48 * time.Hour, By: ByMinute}, []Row{
		minute(k2, now.Add(-30*time.Hour), Delta{Cost: 1000}),
		minute(k2, now.Add(-10*time.Minute), Delta{Refused: 1}),
	})

	// An organization only a keys file knows is found through its rows.
	got, err := Query(ctx, pool, QueryArgs{Org: "org_from_file", Since: time.Hour, Now: now})
	if err != nil || len(got) != 1 || got[0].Admitted != 3 {
		t.Fatalf("keys-file organization: %+v %v", got, err)
	}
	// The organization "other" exists but has no row of acme's.
	if got, err := Query(ctx, pool, QueryArgs{Org: "other", Since: time.Hour, Now: now}); err != nil || len(got) != 1 || got[0].Admitted != 7 {
		t.Fatalf("other: %+v %v", got, err)
	}
}

func TestQueryRefusals(t *testing.T) {
	pool := newPool(t, migratedDB(t))
	ctx := context.Background()
	seedQuery(t, pool, t0)
	if _, err := Query(ctx, pool, QueryArgs{Org: "nobody", Since: time.Hour}); !errors.Is(err, ErrUnknownOrg) {
		t.Fatalf("unknown organization: %v", err)
	}
	for _, q := range []QueryArgs{
		{Org: "acme", Since: 72 * time.Hour, By: ByMinute},
		{Org: "acme", Since: 0},
		{Org: "acme", Since: -time.Hour},
		{Org: "acme", Since: time.Hour, By: "day"},
		{Org: "", Since: time.Hour},
	} {
		if _, err := Query(ctx, pool, q); !errors.Is(err, ErrBadQuery) {
			t.Errorf("%+v: %v, want ErrBadQuery", q, err)
		}
	}
}

func TestGranularity(t *testing.T) {
	for _, c := range []struct {
		since time.Duration
		by    string
		want  string
	}{
		{time.Minute, "", ByMinute},
		{2 * time.Hour, "", ByMinute},
		{2*time.Hour + time.Second, "", ByHour},
		{24 * time.Hour, "", ByHour},
		{48 * time.Hour, ByMinute, ByMinute},
		{time.Minute, ByHour, ByHour},
		{48*time.Hour + time.Second, ByMinute, ""},
	} {
		got, err := QueryArgs{Since: c.since, By: c.by}.Granularity()
		if got != c.want || (err != nil) != (c.want == "") {
			t.Errorf("since %s by %q: %q %v, want %q", c.since, c.by, got, err, c.want)
		}
	}
}
