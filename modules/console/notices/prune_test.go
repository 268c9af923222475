package notices_test

import (
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/console/notices"
)

// TestOldNoticesForgotten: a round forgets a key expiry's and a quota
// crossing's recorded notice once its source can never report it due again,
// keeps a recent one, and keeps a deprecation's whatever its age (forgetting
// it would mail the deprecation again; docs/design.md D82).
func TestOldNoticesForgotten(t *testing.T) {
	pool := newPool(t)
	ctx := t.Context()
	now := time.Now()
	const insert = `INSERT INTO civicgate.mail_notices (kind, org_id, subject, recipients, created_at) VALUES ($1, $2, $3, 1, $4)`
	rows := []struct {
		kind, subject string
		age           time.Duration
	}{
		{notices.KindKeyExpiry, "old key", 40 * 24 * time.Hour},
		{notices.KindKeyExpiry, "recent key", 30 * 24 * time.Hour}, // within 7 days + 30 days
		{notices.KindQuota, "old crossing", 31 * 24 * time.Hour},
		{notices.KindQuota, "recent crossing", 2 * time.Hour},
		{notices.KindDeprecation, "Query.old", 400 * 24 * time.Hour},
	}
	for _, r := range rows {
		if _, err := pool.Exec(ctx, insert, r.kind, "acme", r.subject, now.Add(-r.age)); err != nil {
			t.Fatal(err)
		}
	}
	runner := &notices.Runner{Pool: pool, Now: func() time.Time { return now }, Logger: zap.NewNop(),
		Sources: []notices.Source{notices.KeyExpiry{}, notices.Quota{}, notices.Deprecations{}}}
	if _, err := runner.Once(ctx); err != nil {
		t.Fatal(err)
	}
	kept := func() []string {
		r, err := pool.Query(ctx, `SELECT subject FROM civicgate.mail_notices WHERE org_id = 'acme' ORDER BY subject`)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for r.Next() {
			var s string
			if err := r.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	want := []string{"Query.old", "recent crossing", "recent key"}
	if got := kept(); !slices.Equal(got, want) {
		t.Fatalf("kept %q, want %q", got, want)
	}
	// At most once an hour: a row that ages past its keep within the hour stays until the next prune.
	if _, err := pool.Exec(ctx, insert, notices.KindQuota, "acme", "old crossing", now.Add(-40*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if got := kept(); len(got) != 4 {
		t.Fatalf("a second round within the hour pruned again: kept %q", got)
	}
	now = now.Add(time.Hour)
	if _, err := runner.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if got := kept(); !slices.Equal(got, want) {
		t.Fatalf("an hour later: kept %q, want %q", got, want)
	}
}
