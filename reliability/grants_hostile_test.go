package reliability

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keycmd"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// Hostile grants and threshold records (docs/design.md D81) against real
// PostgreSQL: figures that overflow, are negative, zero or past the bound;
// ends in the past, too far, without sense or with an impossible offset;
// organization names holding SQL, markup and terminal escapes. `keys grant`
// refuses each with exit 2 (the flags) or 1 (no such organization), prints
// no control character, and leaves no grant; the store refuses what the CLI
// would. Threshold records with hostile policy names (NUL, invalid UTF-8,
// 10 000 bytes, quotes) are written as text PostgreSQL holds, so they
// cannot fail the usage flush that carries them.

// escapeRE finds a control character other than a line end in CLI output.
var escapeRE = regexp.MustCompile(`[\x00-\x09\x0b-\x1f\x7f]`)

func TestGrantsHostile(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return dsn
		}
		return ""
	}
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := keycmd.Run(ctx, args, &out, &errb, getenv)
		return code, out.String(), errb.String()
	}
	if code, _, errs := run("migrate"); code != 0 {
		t.Fatalf("migrate: %d %s", code, errs)
	}
	if _, err := keystore.Issue(ctx, pool, "acme", "free", keystore.EnvLive); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--requests", "9223372036854775808", "--until", "1d"},
		{"--requests", "-1", "--until", "1d"},
		{"--requests", "0", "--cost", "0", "--until", "1d"},
		{"--requests", "1e9", "--until", "1d"},
		{"--requests", "1099511627777", "--until", "1d"},
		{"--cost", "-9223372036854775808", "--until", "1d"},
		{"--requests", "5", "--until", "-5m"},
		{"--requests", "5", "--until", "0s"},
		{"--requests", "5", "--until", "100000d"},
		{"--requests", "5", "--until", "2001-01-01T00:00:00Z"},
		{"--requests", "5", "--until", "9999-12-31T23:59:59Z"},
		{"--requests", "5", "--until", "2027-01-01T00:00:00+24:00"},
		{"--requests", "5", "--until", "2027-01-01T00:00:00"},
		{"--requests", "5", "--until", "\x1b[31mred\x1b[0m"},
		{"--requests", "5", "--until", strings.Repeat("9", 10_000) + "h"},
	} {
		code, _, errs := run(append([]string{"grant", "acme"}, args...)...)
		if code != 2 || escapeRE.MatchString(errs) {
			t.Errorf("grant %q: exit %d, stderr %q; want 2 and no control character", args, code, errs)
		}
	}
	for _, org := range []string{
		"acme'; DROP TABLE civicgate.org_grants; --", "<script>alert(1)</script>", "\x1b]0;pwned\x07", "acme\r\nX-Injected: 1",
		strings.Repeat("a", 10_000), "",
	} {
		code, _, errs := run("grant", org, "--requests", "5", "--until", "1d")
		want := 1
		if org == "" {
			want = 2
		}
		if code != want || escapeRE.MatchString(errs) {
			t.Errorf("grant for %q: exit %d, stderr %q; want %d and no control character", org, code, errs, want)
		}
	}
	gs, err := keystore.ListGrants(ctx, pool, time.Now(), true)
	if err != nil || len(gs) != 0 {
		t.Fatalf("grants after refusals: %+v %v", gs, err)
	}
	// The store holds the same bounds for callers other than the CLI.
	for _, g := range []keystore.Grant{
		{Requests: keystore.MaxGrant + 1, Until: time.Now().Add(time.Hour)},
		{Cost: -1, Until: time.Now().Add(time.Hour)},
		{Requests: 5, Until: time.Now().Add(-time.Second)},
		{Until: time.Now().Add(time.Hour)},
	} {
		if _, err := keystore.SetGrant(ctx, pool, "acme", g); err == nil {
			t.Errorf("SetGrant(%+v) accepted", g)
		}
	}
	// And the table holds them against a direct write.
	if _, err := pool.Exec(ctx, `INSERT INTO civicgate.org_grants (org_id, requests, until)
		SELECT id, -5, now() + interval '1 day' FROM civicgate.organizations WHERE name = 'acme'`); err == nil {
		t.Error("the table took a negative quota")
	}

	// Hostile names in threshold records: stored, never failing the flush.
	if err := usage.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	m := usage.NewCrossingMeter(0)
	now := time.Now()
	names := []string{"nul\x00here", "bad\xff\xfeutf8", strings.Repeat("p", 10_000), `"quoted";q=1`, "org'); DELETE FROM civicgate.quota_crossings; --"}
	for _, n := range names {
		m.Add(usage.Crossing{OrgID: n, KeyID: n, Policy: n, Kind: usage.KindRequests, Level: usage.Level80,
			WindowStart: usage.WindowStart(now, time.Minute), Window: time.Minute, Limit: 10, CrossedAt: now})
	}
	if _, err := usage.WriteFlush(ctx, pool, usage.NewBatchID(), usage.Batch{Crossings: m.Drain()}); err != nil {
		t.Fatalf("a flush with hostile names failed: %v", err)
	}
	got, err := usage.UnmailedCrossings(ctx, pool, 100)
	if err != nil || len(got) != len(names) {
		t.Fatalf("recorded %d crossings (%v), want %d", len(got), err, len(names))
	}
	for _, c := range got {
		if len(c.Policy) > 256 || strings.ContainsRune(c.Policy, 0) || c.Limit != 10 {
			t.Errorf("recorded policy %q (%d bytes)", c.Policy[:min(len(c.Policy), 40)], len(c.Policy))
		}
	}
}
