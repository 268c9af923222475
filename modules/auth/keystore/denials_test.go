package keystore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

func migratedPool(t *testing.T) (*pgxpool.Pool, string) {
	t.Helper()
	dsn := testenv.Postgres(t)
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	return pool, dsn
}

type auditRow struct{ actor, role, action, target, detail string }

func denialAudit(t *testing.T, pool *pgxpool.Pool) []auditRow {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT actor, role, action, target, detail FROM civicgate.audit_log
		WHERE action LIKE 'token.%' AND org_id IS NULL ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (auditRow, error) {
		var a auditRow
		return a, r.Scan(&a.actor, &a.role, &a.action, &a.target, &a.detail)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDenyUndenyListRoundTrip(t *testing.T) {
	pool, _ := migratedPool(t)
	ctx := context.Background()
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)

	sub, err := DenyToken(ctx, pool, Denial{Kind: DenySub, Value: "auth0|Alice", Reason: "leaked laptop"}, "cli:ops")
	if err != nil || sub.Replaced != nil || sub.Actor != "cli:ops" || sub.CreatedAt.IsZero() {
		t.Fatalf("deny sub: %+v %v", sub, err)
	}
	jti, err := DenyToken(ctx, pool, Denial{Kind: DenyJTI, Issuer: "https://idp.example/", Value: "tok-1", ExpiresAt: &until}, "cli:ops")
	if err != nil || jti.Replaced != nil {
		t.Fatalf("deny jti: %+v %v", jti, err)
	}
	list, err := ListDenials(ctx, pool, DenialFilter{})
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %+v %v", list, err)
	}
	if d := list[0]; d.Kind != DenyJTI || d.Issuer != "https://idp.example/" || d.Value != "tok-1" || d.ExpiresAt == nil ||
		!d.ExpiresAt.Equal(until) || d.Actor != "cli:ops" {
		t.Fatalf("listed jti: %+v", d)
	}
	if d := list[1]; d.Kind != DenySub || d.Issuer != "" || d.Value != "auth0|Alice" || d.Reason != "leaked laptop" || d.ExpiresAt != nil {
		t.Fatalf("listed sub: %+v", d)
	}
	if only, err := ListDenials(ctx, pool, DenialFilter{Kind: DenySub}); err != nil || len(only) != 1 || only[0].Kind != DenySub {
		t.Fatalf("list sub only: %+v %v", only, err)
	}

	// Denying again replaces the reason, end and actor, and says what it replaced.
	again, err := DenyToken(ctx, pool, Denial{Kind: DenySub, Value: "auth0|Alice", Reason: "confirmed", ExpiresAt: &until}, "cli:lead")
	if err != nil || again.Replaced == nil || again.Replaced.Reason != "leaked laptop" || again.Replaced.Actor != "cli:ops" {
		t.Fatalf("deny again: %+v %v", again, err)
	}
	if list, _ := ListDenials(ctx, pool, DenialFilter{Kind: DenySub}); len(list) != 1 || list[0].Reason != "confirmed" || list[0].Actor != "cli:lead" {
		t.Fatalf("after the replacement: %+v", list)
	}

	// The issuer is part of the denial: "" is the any-issuer one, not a wildcard for undeny.
	if _, err := UndenyToken(ctx, pool, DenyJTI, "", "tok-1", "cli:ops"); !errors.Is(err, ErrNotDenied) {
		t.Fatalf("undeny with the wrong issuer: %v", err)
	}
	if _, err := UndenyToken(ctx, pool, DenySub, "", "auth0|alice", "cli:ops"); !errors.Is(err, ErrNotDenied) {
		t.Fatalf("undeny is case sensitive: %v", err)
	}
	gone, err := UndenyToken(ctx, pool, DenyJTI, "https://idp.example/", "tok-1", "cli:ops")
	if err != nil || gone.Value != "tok-1" || gone.Actor != "cli:ops" {
		t.Fatalf("undeny jti: %+v %v", gone, err)
	}
	if _, err := UndenyToken(ctx, pool, DenyJTI, "https://idp.example/", "tok-1", "cli:ops"); !errors.Is(err, ErrNotDenied) {
		t.Fatalf("undeny twice: %v", err)
	}
	if list, _ := ListDenials(ctx, pool, DenialFilter{}); len(list) != 1 || list[0].Kind != DenySub {
		t.Fatalf("after undeny: %+v", list)
	}

	want := []auditRow{
		{"cli:ops", "operator", "token.deny", "sub:auth0|Alice", "issuer=* until=never reason=leaked laptop"},
		{"cli:ops", "operator", "token.deny", "jti:tok-1", "issuer=https://idp.example/ until=" + until.Format(time.RFC3339) + " reason="},
		{"cli:lead", "operator", "token.deny", "sub:auth0|Alice", "issuer=* until=" + until.Format(time.RFC3339) + " reason=confirmed; replaces the denial of " +
			sub.CreatedAt.UTC().Format(time.RFC3339) + " by cli:ops"},
		{"cli:ops", "operator", "token.undeny", "jti:tok-1", "issuer=https://idp.example/ until=" + until.Format(time.RFC3339) + " reason="},
	}
	got := denialAudit(t, pool)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("audit rows:\n got %+v\nwant %+v", got, want)
	}
}

func TestDenyRefusals(t *testing.T) {
	pool, _ := migratedPool(t)
	ctx := context.Background()
	past := time.Now().Add(-time.Second)
	for name, d := range map[string]Denial{
		"kind":          {Kind: "email", Value: "a@example.org"},
		"empty value":   {Kind: DenySub},
		"long value":    {Kind: DenySub, Value: strings.Repeat("a", MaxDenyValueLen+1)},
		"control":       {Kind: DenyJTI, Value: "a\tb"},
		"bad UTF-8":     {Kind: DenySub, Value: "a\xffb"},
		"long issuer":   {Kind: DenySub, Value: "a", Issuer: strings.Repeat("i", MaxDenyIssuerLen+1)},
		"reason line":   {Kind: DenySub, Value: "a", Reason: "two\nlines"},
		"ended already": {Kind: DenySub, Value: "a", ExpiresAt: &past},
	} {
		if _, err := DenyToken(ctx, pool, d, "cli:ops"); !errors.Is(err, ErrBadDenial) {
			t.Errorf("%s: %v, want ErrBadDenial", name, err)
		}
	}
	if _, err := DenyToken(ctx, pool, Denial{Kind: DenySub, Value: "a"}, ""); !errors.Is(err, ErrBadDenial) {
		t.Errorf("no actor: %v", err)
	}
	if _, err := DenyToken(ctx, pool, Denial{Kind: DenySub, Value: strings.Repeat("a", MaxDenyValueLen)}, "cli:ops"); err != nil {
		t.Errorf("a value of the largest length: %v", err)
	}
	if n := len(denialAudit(t, pool)); n != 1 {
		t.Errorf("%d audit rows, want only the accepted denial's", n)
	}
}

// TestDenyUndeniableValues: a 600-byte subject or token id, or one holding a
// tab, is refused by the store and the refusal says why nothing is lost: the
// gateway admits no token carrying one (denyable's rule is the verifier's
// too, docs/design.md D64). Nothing is written.
func TestDenyUndeniableValues(t *testing.T) {
	pool, _ := migratedPool(t)
	ctx := context.Background()
	for _, v := range []string{strings.Repeat("s", 600), "auth0|user\t1"} {
		for _, kind := range []string{DenySub, DenyJTI} {
			want := "the gateway admits no token carrying such a " + kind
			_, err := DenyToken(ctx, pool, Denial{Kind: kind, Value: v, Reason: "test"}, "cli:ops")
			if !errors.Is(err, ErrBadDenial) || !strings.Contains(err.Error(), want) {
				t.Errorf("deny %s %.20q: %v; want ErrBadDenial saying %q", kind, v, err, want)
			}
			if _, err := UndenyToken(ctx, pool, kind, "", v, "cli:ops"); !errors.Is(err, ErrBadDenial) || !strings.Contains(err.Error(), want) {
				t.Errorf("undeny %s %.20q: %v; want ErrBadDenial saying %q", kind, v, err, want)
			}
		}
	}
	if n := len(denialAudit(t, pool)); n != 0 {
		t.Errorf("%d audit rows after refused denials", n)
	}
}

// TestDenyTableConstraints: the table refuses what Denial.Check refuses, so
// a denial written by hand is held to the same bounds.
func TestDenyTableConstraints(t *testing.T) {
	pool, _ := migratedPool(t)
	ctx := context.Background()
	long := strings.Repeat("v", MaxDenyValueLen+1)
	for name, cols := range map[string][]any{
		"kind":        {"email", "", "a", ""},
		"empty value": {"sub", "", "", ""},
		"long value":  {"sub", "", long, ""},
		"control":     {"jti", "", "a\x1bb", ""},
		"DEL":         {"jti", "", "a\x7fb", ""},
		"issuer":      {"sub", "https://idp\n", "a", ""},
		"reason":      {"sub", "", "a", "x\ry"},
	} {
		d := Denial{Kind: cols[0].(string), Issuer: cols[1].(string), Value: cols[2].(string), Reason: cols[3].(string)}
		if d.Check() == nil {
			t.Errorf("%s: Check accepts %+v", name, d)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO civicgate.token_denials (kind, issuer, value, reason, actor) VALUES ($1, $2, $3, $4, 'sql')`, cols...); err == nil {
			t.Errorf("%s: the table accepts %+v", name, d)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO civicgate.token_denials (kind, value, actor, created_at, expires_at)
		VALUES ('sub', 'a', 'sql', now(), now() - interval '1 second')`); err == nil {
		t.Error("the table accepts a denial ending before it was made")
	}
	if _, err := pool.Exec(ctx, `INSERT INTO civicgate.token_denials (kind, value, actor) VALUES ('sub', 'ünïcode|subject', 'sql')`); err != nil {
		t.Errorf("a non-ASCII subject: %v", err)
	}
}

func TestDenyExpiry(t *testing.T) {
	pool, _ := migratedPool(t)
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Microsecond)
	soon, later := t0.Add(time.Hour), t0.Add(2*time.Hour)
	for _, d := range []Denial{
		{Kind: DenySub, Value: "soon", ExpiresAt: &soon},
		{Kind: DenySub, Value: "later", ExpiresAt: &later},
		{Kind: DenyJTI, Value: "forever"},
	} {
		if _, err := DenyToken(ctx, pool, d, "cli:ops"); err != nil {
			t.Fatal(err)
		}
	}
	set, err := LoadDenials(ctx, pool, t0)
	if err != nil || set.Len() != 3 || set.Skipped() != 0 || !set.NextExpiry().Equal(soon) {
		t.Fatalf("load at t0: len %d skipped %d next %v, %v", set.Len(), set.Skipped(), set.NextExpiry(), err)
	}
	for _, c := range []struct {
		at   time.Time
		sub  string
		want bool
	}{
		{t0, "soon", true},
		{soon.Add(-time.Microsecond), "soon", true},
		{soon, "soon", false}, // ends at expires_at
		{soon, "later", true},
		{later.Add(time.Hour), "later", false},
	} {
		if _, ok := set.DeniedAt("https://idp.example/", c.sub, "", c.at); ok != c.want {
			t.Errorf("%s at t0+%v: denied %v, want %v", c.sub, c.at.Sub(t0), ok, c.want)
		}
	}
	if kind, ok := set.Denied("https://idp.example/", "soon", ""); !ok || kind != DenySub {
		t.Errorf("soon, now: %q %v", kind, ok)
	}
	if kind, ok := set.DeniedAt("iss", "x", "forever", later.Add(1000*time.Hour)); !ok || kind != DenyJTI {
		t.Errorf("forever: %q %v", kind, ok)
	}

	// Reloaded at NextExpiry: the ended denial is gone and the next end moves on.
	set, err = LoadDenials(ctx, pool, set.NextExpiry())
	if err != nil || set.Len() != 2 || !set.NextExpiry().Equal(later) {
		t.Fatalf("load at the first end: len %d next %v, %v", set.Len(), set.NextExpiry(), err)
	}
	if _, ok := set.DeniedAt("iss", "soon", "", t0); ok {
		t.Error("a denial past its end when loaded still denies")
	}
	if set, _ = LoadDenials(ctx, pool, later); set.Len() != 1 || !set.NextExpiry().IsZero() {
		t.Fatalf("load after both ends: len %d next %v", set.Len(), set.NextExpiry())
	}

	// Listing: in force only unless expired ones are asked for.
	if _, err := pool.Exec(ctx, `UPDATE civicgate.token_denials SET created_at = created_at - interval '2 hours',
		expires_at = now() - interval '1 minute' WHERE value = 'soon'`); err != nil {
		t.Fatal(err)
	}
	if list, err := ListDenials(ctx, pool, DenialFilter{}); err != nil || len(list) != 2 {
		t.Fatalf("in force: %+v %v", list, err)
	}
	list, err := ListDenials(ctx, pool, DenialFilter{Expired: true})
	if err != nil || len(list) != 3 || list[2].Value != "soon" || !list[2].Expired(time.Now()) {
		t.Fatalf("with the expired: %+v %v", list, err)
	}
	if _, err := UndenyToken(ctx, pool, DenySub, "", "soon", "cli:ops"); err != nil {
		t.Fatalf("undeny an expired denial: %v", err)
	}
}

func TestDenyNotifies(t *testing.T) {
	pool, dsn := migratedPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		t.Fatal(err)
	}
	next := func(want string) {
		t.Helper()
		n, err := conn.WaitForNotification(ctx)
		if err != nil || n.Channel != Channel || n.Payload != want {
			t.Fatalf("notification %+v %v, want %q", n, err, want)
		}
	}
	if _, err := DenyToken(ctx, pool, Denial{Kind: DenySub, Value: "s"}, "cli:ops"); err != nil {
		t.Fatal(err)
	}
	next("deny:sub")
	// A refused deny notifies nothing: the next payload is the jti's.
	if _, err := DenyToken(ctx, pool, Denial{Kind: DenySub, Value: ""}, "cli:ops"); err == nil {
		t.Fatal("an empty subject was denied")
	}
	if _, err := UndenyToken(ctx, pool, DenySub, "", "nobody", "cli:ops"); !errors.Is(err, ErrNotDenied) {
		t.Fatal(err)
	}
	if _, err := DenyToken(ctx, pool, Denial{Kind: DenyJTI, Issuer: "https://idp.example/", Value: "j"}, "cli:ops"); err != nil {
		t.Fatal(err)
	}
	next("deny:jti")
	if _, err := UndenyToken(ctx, pool, DenySub, "", "s", "cli:ops"); err != nil {
		t.Fatal(err)
	}
	next("deny:sub")
}

// TestLoadDenialsSkipsBadRows: rows the constraints would refuse, written
// with them dropped, are skipped and counted; the good rows still deny.
func TestLoadDenialsSkipsBadRows(t *testing.T) {
	pool, _ := migratedPool(t)
	ctx := context.Background()
	if _, err := DenyToken(ctx, pool, Denial{Kind: DenySub, Value: "good"}, "cli:ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ALTER TABLE civicgate.token_denials DROP CONSTRAINT token_denials_kind_check,
		DROP CONSTRAINT token_denials_value_check, DROP CONSTRAINT token_denials_issuer_check`); err != nil {
		t.Fatal(err)
	}
	for _, row := range [][]any{
		{"email", "", "good"},
		{"sub", "", ""},
		{"jti", "", strings.Repeat("j", MaxDenyValueLen+1)},
		{"sub", "", "bad\x1b[2J"},
		{"sub", "https://idp\t", "other"},
	} {
		if _, err := pool.Exec(ctx, `INSERT INTO civicgate.token_denials (kind, issuer, value, actor) VALUES ($1, $2, $3, 'hand')`, row...); err != nil {
			t.Fatal(err)
		}
	}
	set, err := LoadDenials(ctx, pool, time.Now())
	if err != nil || set.Len() != 1 || set.Skipped() != 5 {
		t.Fatalf("len %d skipped %d, %v", set.Len(), set.Skipped(), err)
	}
	if _, ok := set.Denied("iss", "good", ""); !ok {
		t.Error("the good row does not deny")
	}
	named := map[string]SetAsideDenial{}
	for _, row := range set.SetAside() {
		named[row.Kind+" "+row.Issuer] = row
		if len(row.Value) > 90 || strings.ContainsAny(row.Value+row.Issuer+row.Kind+row.Problem, "\x1b\t") {
			t.Errorf("set-aside row not printable and bounded: %+v", row)
		}
	}
	if row, ok := named[`"sub" "https://idp\t"`]; !ok || row.Value != `"other"` || !strings.Contains(row.Problem, "issuer holds a control character") {
		t.Errorf("the issuer row is not named with its problem: %+v (all: %+v)", row, set.SetAside())
	}
	if row := named[`"email" ""`]; row.Value != `"good"` || !strings.Contains(row.Problem, "kind") {
		t.Errorf("the kind row is not named with its problem: %+v", row)
	}
	if _, ok := set.Denied("https://idp\t", "other", ""); ok {
		t.Error("a skipped row denies")
	}
}

func TestDenyListNeedsMigration(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	ctx := context.Background()
	if _, err := ListDenials(ctx, pool, DenialFilter{}); !errors.Is(err, ErrNoDenyTable) {
		t.Errorf("list: %v", err)
	}
	if _, err := LoadDenials(ctx, pool, time.Now()); !errors.Is(err, ErrNoDenyTable) {
		t.Errorf("load: %v", err)
	}
	if _, err := DenyToken(ctx, pool, Denial{Kind: DenySub, Value: "s"}, "cli:ops"); !errors.Is(err, ErrNoDenyTable) {
		t.Errorf("deny: %v", err)
	}
}

func denySet(ds ...Denial) DenySet {
	var s DenySet
	for _, d := range ds {
		s.add(d)
	}
	return s
}

func TestDenySetSemantics(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	end := t0.Add(time.Hour)
	s := denySet(
		Denial{Kind: DenySub, Value: "alice"},                             // any issuer
		Denial{Kind: DenySub, Issuer: "https://a.example/", Value: "bob"}, // one issuer
		Denial{Kind: DenyJTI, Issuer: "https://a.example/", Value: "t1", ExpiresAt: &end},
		Denial{Kind: DenyJTI, Value: "t2"},
	)
	for _, c := range []struct {
		iss, sub, jti string
		kind          string
	}{
		{"https://a.example/", "alice", "", DenySub},
		{"https://b.example/", "alice", "", DenySub}, // the empty issuer is a wildcard
		{"", "alice", "", DenySub},
		{"https://a.example/", "bob", "", DenySub},
		{"https://b.example/", "bob", "", ""},    // bob only at a
		{"https://a.example", "bob", "", ""},     // issuers compare exactly
		{"https://a.example/", "Alice", "", ""},  // values compare exactly
		{"https://a.example/", "alice ", "", ""}, // no trimming
		{"https://a.example/", "carol", "t1", DenyJTI},
		{"https://b.example/", "carol", "t1", ""}, // t1 only at a
		{"https://b.example/", "carol", "t2", DenyJTI},
		{"https://a.example/", "t2", "", ""},           // a jti denial is not a sub denial
		{"https://a.example/", "", "alice", ""},        // nor the reverse
		{"https://a.example/", "alice", "t2", DenySub}, // sub is reported first
		{"https://a.example/", "", "", ""},
	} {
		kind, ok := s.DeniedAt(c.iss, c.sub, c.jti, t0)
		if kind != c.kind || ok != (c.kind != "") {
			t.Errorf("DeniedAt(%q, %q, %q): %q %v, want %q", c.iss, c.sub, c.jti, kind, ok, c.kind)
		}
	}
	if _, ok := s.DeniedAt("https://a.example/", "", "t1", end); ok {
		t.Error("t1 denied at its end")
	}
	if !s.NextExpiry().Equal(end) || s.Len() != 4 {
		t.Errorf("next %v len %d", s.NextExpiry(), s.Len())
	}
	// Denied reads the clock: t1 ended long ago.
	if _, ok := s.Denied("https://a.example/", "", "t1"); ok {
		t.Error("Denied honours no end")
	}
	var zero DenySet
	if kind, ok := zero.Denied("iss", "alice", "t2"); ok || kind != "" || !zero.NextExpiry().IsZero() {
		t.Error("the zero DenySet denies")
	}

	// The same value denied at one issuer and at any: either matches.
	both := denySet(Denial{Kind: DenySub, Issuer: "https://a.example/", Value: "dan", ExpiresAt: &end}, Denial{Kind: DenySub, Value: "dan"})
	if _, ok := both.DeniedAt("https://a.example/", "dan", "", end.Add(time.Hour)); !ok {
		t.Error("the any-issuer denial of dan does not deny after the issuer's one ended")
	}
}

func TestDenySetDeniedAllocatesNothing(t *testing.T) {
	s := benchSet()
	end := time.Now().Add(time.Hour)
	s.add(Denial{Kind: DenySub, Value: "timed", ExpiresAt: &end})
	for _, c := range [][3]string{
		{"https://idp.example/", "sub-500", "jti-x"}, // hit
		{"https://idp.example/", "nobody", "jti-x"},  // two misses
		{"https://idp.example/", "timed", ""},        // hit that reads the clock
	} {
		if n := testing.AllocsPerRun(100, func() { s.Denied(c[0], c[1], c[2]) }); n != 0 {
			t.Errorf("Denied%v: %v allocations", c, n)
		}
	}
}

func benchSet() DenySet {
	var s DenySet
	for i := range 1000 {
		s.add(Denial{Kind: DenySub, Value: fmt.Sprintf("sub-%d", i)})
		s.add(Denial{Kind: DenyJTI, Issuer: "https://idp.example/", Value: fmt.Sprintf("jti-%d", i)})
	}
	return s
}

// BenchmarkDenySetDenied: a set of 1000 subjects and 1000 token ids; the
// gateway asks on every request of a token.
func BenchmarkDenySetDenied(b *testing.B) {
	s := benchSet()
	for _, c := range []struct{ name, sub, jti string }{
		{"miss", "nobody", "jti-none"},
		{"sub_hit", "sub-500", "jti-none"},
		{"jti_hit", "nobody", "jti-500"},
		{"no_jti", "nobody", ""},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.Denied("https://idp.example/", c.sub, c.jti)
			}
		})
	}
	b.Run("empty_set", func(b *testing.B) {
		var empty DenySet
		b.ReportAllocs()
		for b.Loop() {
			empty.Denied("https://idp.example/", "nobody", "jti-none")
		}
	})
}
