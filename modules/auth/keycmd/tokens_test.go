package keycmd

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// tokens runs `civicgate tokens args…` on c's database as the OS user "ops".
func (c cli) tokens(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = RunTokens(context.Background(), args, &out, &errb, func(k string) string {
		switch k {
		case "DATABASE_URL":
			return c.dsn
		case "USER":
			return "ops"
		}
		return ""
	})
	return code, out.String(), errb.String()
}

func (c cli) mustTokens(args ...string) string {
	c.t.Helper()
	code, out, errs := c.tokens(args...)
	if code != 0 {
		c.t.Fatalf("tokens %v: exit %d: %s", args, code, errs)
	}
	return out
}

type denialList struct {
	Denials []struct {
		Kind      string     `json:"kind"`
		Value     string     `json:"value"`
		Issuer    string     `json:"issuer"`
		Reason    string     `json:"reason"`
		CreatedAt time.Time  `json:"created_at"`
		ExpiresAt *time.Time `json:"expires_at"`
		Actor     string     `json:"actor"`
		Ended     bool       `json:"ended"`
	} `json:"denials"`
}

func (c cli) denialsJSON(args ...string) denialList {
	c.t.Helper()
	var l denialList
	out := c.mustTokens(append([]string{"list", "--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), &l); err != nil || l.Denials == nil {
		c.t.Fatalf("list --json: %v (nil list: %v)\n%s", err, l.Denials == nil, out)
	}
	return l
}

func TestTokensCLIFlows(t *testing.T) {
	c := cli{t, testenv.Postgres(t)}
	c.must("migrate")
	if l := c.denialsJSON(); len(l.Denials) != 0 {
		t.Fatalf("a new database lists %+v", l)
	}

	before := time.Now()
	out := c.mustTokens("deny", "--sub", "auth0|alice", "--reason", "leaked laptop", "--until", "24h")
	if !strings.Contains(out, `Denied sub "auth0|alice" of any issuer until `) || !strings.Contains(out, "within about 2 s") {
		t.Fatalf("deny --sub: %q", out)
	}
	out = c.mustTokens("deny", "--jti", "tok-1", "--issuer", "https://idp.example/")
	if !strings.Contains(out, `Denied jti "tok-1" of issuer "https://idp.example/" until undenied`) {
		t.Fatalf("deny --jti: %q", out)
	}

	l := c.denialsJSON()
	if len(l.Denials) != 2 {
		t.Fatalf("list: %+v", l)
	}
	j, s := l.Denials[0], l.Denials[1]
	if j.Kind != "jti" || j.Value != "tok-1" || j.Issuer != "https://idp.example/" || j.ExpiresAt != nil || j.Ended || j.Actor != "cli:ops" {
		t.Fatalf("listed jti: %+v", j)
	}
	if s.Kind != "sub" || s.Value != "auth0|alice" || s.Issuer != "" || s.Reason != "leaked laptop" || s.ExpiresAt == nil ||
		s.ExpiresAt.Before(before.Add(24*time.Hour-time.Second)) || s.ExpiresAt.After(time.Now().Add(24*time.Hour)) {
		t.Fatalf("listed sub: %+v", s)
	}
	table := c.mustTokens("list")
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "KIND") ||
		strings.Join(strings.Fields(lines[1])[:5], " ") != "jti tok-1 https://idp.example/ denied -" ||
		strings.Join(strings.Fields(lines[2])[:4], " ") != "sub auth0|alice * denied" || !strings.HasSuffix(lines[2], "cli:ops  leaked laptop") {
		t.Fatalf("list:\n%s", table)
	}

	// Denying again replaces the denial, and says so.
	out = c.mustTokens("deny", "--sub", "auth0|alice", "--reason", "confirmed", "--until", "2099-01-01T00:00:00Z")
	if !strings.Contains(out, "until 2099-01-01T00:00:00Z") || !strings.Contains(out, `It replaces the denial of `) || !strings.Contains(out, `reason "leaked laptop"`) {
		t.Fatalf("deny again: %q", out)
	}

	// Undeny needs the issuer it was denied with.
	code, _, errs := c.tokens("undeny", "--jti", "tok-1")
	if code != 1 || !strings.Contains(errs, `jti "tok-1" of any issuer is not denied; nothing changed`) {
		t.Fatalf("undeny without the issuer: exit %d %q", code, errs)
	}
	out = c.mustTokens("undeny", "--jti", "tok-1", "--issuer", "https://idp.example/")
	if !strings.Contains(out, `Undenied jti "tok-1" of issuer "https://idp.example/"`) || !strings.Contains(out, "by cli:ops") {
		t.Fatalf("undeny: %q", out)
	}

	// An ended denial is listed with --all only.
	pool := newPool(t, c.dsn)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `UPDATE civicgate.token_denials SET created_at = now() - interval '2 hours', expires_at = now() - interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
	if l := c.denialsJSON(); len(l.Denials) != 0 {
		t.Fatalf("an ended denial is listed: %+v", l)
	}
	if l := c.denialsJSON("--all"); len(l.Denials) != 1 || !l.Denials[0].Ended {
		t.Fatalf("list --all: %+v", l)
	}
	if table := c.mustTokens("list", "--all"); !strings.Contains(table, " ended ") {
		t.Fatalf("list --all:\n%s", table)
	}

	// Every change is in the audit log, as the OS user.
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM civicgate.audit_log WHERE actor = 'cli:ops' AND role = 'operator'
		AND action IN ('token.deny', 'token.undeny')`).Scan(&n); err != nil || n != 4 {
		t.Fatalf("%d audit rows, %v; want 4", n, err)
	}
}

func TestTokensCLIUsageErrors(t *testing.T) {
	c := cli{t, testenv.Postgres(t)}
	c.must("migrate")
	long := strings.Repeat("x", keystore.MaxDenyValueLen+1)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "usage: civicgate tokens"},
		{[]string{"frobnicate"}, "unknown command frobnicate"},
		{[]string{"deny"}, "exactly one of --sub and --jti"},
		{[]string{"deny", "--sub", "a", "--jti", "b"}, "exactly one of --sub and --jti"},
		{[]string{"undeny", "--issuer", "https://idp.example/"}, "exactly one of --sub and --jti"},
		{[]string{"deny", "--sub", long}, "--sub is 513 bytes long; at most 512 fit the deny list"},
		{[]string{"undeny", "--jti", long}, "--jti is 513 bytes long; at most 512 fit the deny list"},
		{[]string{"deny", "--sub", strings.Repeat("s", 600)}, "--sub is 600 bytes long; at most 512 fit the deny list; the gateway admits no token carrying such a sub"},
		{[]string{"deny", "--sub", "auth0|user\t1"}, "--sub holds a control character; the gateway admits no token carrying such a sub"},
		{[]string{"deny", "--sub", ""}, "--sub is empty"},
		{[]string{"deny", "--jti", "a\x1b[2Jb"}, "--jti holds a control character"},
		{[]string{"deny", "--sub", "a", "--issuer", strings.Repeat("i", keystore.MaxDenyIssuerLen+1)}, "--issuer is 1025 bytes long"},
		{[]string{"deny", "--sub", "a", "--reason", "two\nlines"}, "--reason holds a control character"},
		{[]string{"deny", "--sub", "a", "--until", "tomorrow"}, "neither an RFC 3339 time"},
		{[]string{"deny", "--sub", "a", "--until", "2001-01-01T00:00:00Z"}, "is not in the future"},
		{[]string{"deny", "--sub", "a", "--until", "-5m"}, "must be positive"},
		{[]string{"deny", "--sub", "a", "--until", "0d"}, "must be positive"},
		{[]string{"undeny", "--sub", "a", "--reason", "x"}, "tokens undeny does not take --reason"},
		{[]string{"list", "--sub", "a"}, "tokens list does not take --sub"},
		{[]string{"list", "extra"}, `takes only flags, not "extra"`},
		{[]string{"deny", "--sub", "a", "--file", "keys.json"}, "a keys file (--file) holds none"},
		{[]string{"list", "--file", "keys.json"}, "a keys file (--file) holds none"},
		{[]string{"deny", "--sub", "a", "--org", "acme"}, "flag provided but not defined: -org"},
	} {
		code, out, errs := c.tokens(tc.args...)
		if code != 2 || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("tokens %q: exit %d, out %q, err %q; want exit 2 and %q", tc.args, code, out, errs, tc.want)
		}
	}
	if l := c.denialsJSON(); len(l.Denials) != 0 {
		t.Fatalf("a refused command line denied %+v", l)
	}
	if code, _, errs := c.tokens("deny", "--sub", strings.Repeat("x", keystore.MaxDenyValueLen)); code != 0 {
		t.Fatalf("a subject of the largest length: exit %d %q", code, errs)
	}

	var none cli
	none.t = t
	if code, _, errs := none.tokens("list"); code != 1 || !strings.Contains(errs, "DATABASE_URL is not set") || !strings.Contains(errs, "PostgreSQL only") {
		t.Fatalf("without DATABASE_URL: exit %d %q", code, errs)
	}
	if code, _, errs := c.tokens("help"); code != 0 || !strings.Contains(errs, "a keys file (--file) holds") {
		t.Fatalf("help: exit %d %q", code, errs)
	}
}

func TestTokensCLINeedsMigration(t *testing.T) {
	c := cli{t, testenv.Postgres(t)}
	for _, args := range [][]string{{"list"}, {"deny", "--sub", "a"}, {"undeny", "--jti", "b"}} {
		if code, _, errs := c.tokens(args...); code != 1 || !strings.Contains(errs, "run `civicgate keys migrate`") {
			t.Errorf("tokens %v before migrate: exit %d %q", args, code, errs)
		}
	}
}

func TestParseUntil(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"90m":                  now.Add(90 * time.Minute),
		"7d":                   now.Add(7 * 24 * time.Hour),
		"2026-03-01T12:00:01Z": now.Add(time.Second),
	} {
		if got, err := parseUntil(in, now); err != nil || !got.Equal(want) {
			t.Errorf("%s: %v %v, want %v", in, got, err, want)
		}
	}
	// Refused: no duration, not positive, not a whole number of days, over
	// 100 years, a date without a time, now itself (another zone).
	for _, in := range []string{"", "0", "7", "-1d", "1.5d", "36501d", "2026-03-01", "next week", "2026-03-01T14:00:00+02:00"} {
		if got, err := parseUntil(in, now); err == nil {
			t.Errorf("%q: %v, want refused", in, got)
		}
	}
}
