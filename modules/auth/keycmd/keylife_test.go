package keycmd

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// TestKeysCLILifecycle (PostgreSQL and a keys file alike): `keys issue
// --expires --name --label` stores the key's expiry, name and labels, says
// when it expires, and `keys list` shows them in the table and in --json;
// `list --expiring` keeps the live keys expiring within the window; the
// database's audit entry names them. Bad values exit 2 with a message that
// names the flag, quoting no name or value, and issue nothing.
func TestKeysCLILifecycle(t *testing.T) {
	for _, s := range bothStores(t) {
		t.Run(s.name, func(t *testing.T) {
			out := s.must("issue", "--org", "acme", "--tier", "free", "--env", "live", "--expires", "3d",
				"--name", "nightly export", "--label", "team=data", "--label", "cost.center=42, b")
			id, key := issuedKey(t, out)
			if !strings.Contains(out, "Expires: ") || !strings.Contains(out, `401 "API key expired"`) {
				t.Errorf("issue printed %q, want the expiry", out)
			}
			r := s.record(t, key)
			wantLabels := map[string]string{"team": "data", "cost.center": "42, b"}
			if r.Name != "nightly export" || !maps.Equal(r.Labels, wantLabels) || r.ExpiresAt.Sub(time.Now().Add(72*time.Hour)).Abs() > time.Minute {
				t.Fatalf("record %+v", r)
			}
			at := s.must("issue", "--org", "acme", "--tier", "free", "--env", "test", "--expires", "2030-06-01T12:00:00+02:00")
			_, atKey := issuedKey(t, at)
			if got := s.record(t, atKey).ExpiresAt; !got.Equal(time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)) {
				t.Errorf("--expires with an offset: %v", got)
			}
			plainID, _ := issuedKey(t, s.must("issue", "--org", "beta", "--tier", "free", "--env", "live"))

			l := listJSON(t, s)
			k := l.find(id)
			if k.Name != "nightly export" || !maps.Equal(k.Labels, wantLabels) || k.ExpiresAt == nil || k.ExpiresAt.Location() != time.UTC {
				t.Errorf("list --json: %+v", k)
			}
			if p := l.find(plainID); p.Name != "" || p.Labels == nil || len(p.Labels) != 0 || p.ExpiresAt != nil {
				t.Errorf("list --json of a key without a lifecycle: %+v (want name \"\", labels {}, expires_at null)", p)
			}
			table := s.must("list", "--org", "acme")
			for _, want := range []string{"EXPIRES", "LABELS", "NAME", "cost.center=42, b,team=data", "nightly export", stamp(*k.ExpiresAt)} {
				if !strings.Contains(table, want) {
					t.Errorf("the table lacks %q:\n%s", want, table)
				}
			}

			if got := listJSON(t, s, "--expiring", "7d").Keys; len(got) != 1 || got[0].ID != id {
				t.Errorf("--expiring 7d: %+v, want only %s", got, id)
			}
			if got := listJSON(t, s, "--expiring", "48h").Keys; len(got) != 0 {
				t.Errorf("--expiring 48h: %+v, want none", got)
			}
			if table := s.must("list", "--expiring", "7d"); strings.Contains(table, plainID) || !strings.Contains(table, id) {
				t.Errorf("list --expiring 7d:\n%s", table)
			}

			// Rotation keeps the lifecycle on the new key.
			rot := s.must("rotate", "--org", "acme", "--env", "live", "--overlap", "0")
			_, newKey := issuedKey(t, rot)
			if nr := s.record(t, newKey); nr.Name != r.Name || !maps.Equal(nr.Labels, r.Labels) || !nr.ExpiresAt.Equal(r.ExpiresAt) {
				t.Errorf("the rotated-in key %+v, want the lifecycle of %+v", nr, r)
			}
		})
	}
}

// TestKeysCLILifecycleAudited: an issue with a lifecycle is audited with
// it, in the console's words (keystore.Lifecycle.AuditDetail).
func TestKeysCLILifecycleAudited(t *testing.T) {
	dsn := testenv.Postgres(t)
	c := cli{t, dsn}
	c.must("migrate")
	id, _ := issuedKey(t, c.must("issue", "--org", "acme", "--tier", "free", "--env", "live", "--expires", "2031-01-01T00:00:00Z",
		"--name", `say "hi"`, "--label", "team=data"))
	pool := newPool(t, dsn)
	entries, _, err := keystore.ListAudit(t.Context(), pool, keystore.AuditQuery{})
	if err != nil || len(entries) != 1 {
		t.Fatalf("audit: %+v %v", entries, err)
	}
	if e := entries[0]; e.Target != id || e.Detail != `live, tier free, expires 2031-01-01T00:00:00Z, name "say \"hi\"", labels team=data` {
		t.Errorf("audit entry %+v", e)
	}
}

// TestKeysCLILifecycleRefusals: every bad --expires, --name, --label and
// --expiring exits 2 naming the flag, prints no key, quotes no control
// character, and issues nothing; lifecycle flags on another command are
// usage errors too.
func TestKeysCLILifecycleRefusals(t *testing.T) {
	c := cli{t, testenv.Postgres(t)}
	c.must("migrate")
	issue := []string{"issue", "--org", "acme", "--tier", "free", "--env", "live"}
	seventeen := []string{}
	for i := range 17 {
		seventeen = append(seventeen, "--label", string(rune('a'+i))+"=v")
	}
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--expires", "2020-01-01T00:00:00Z"}, "--expires"},
		{[]string{"--expires", "0"}, "--expires"},
		{[]string{"--expires", "-3d"}, "--expires"},
		{[]string{"--expires", "next tuesday"}, "--expires"},
		{[]string{"--expires", "2030-01-01T00:00:00"}, "--expires"},
		{[]string{"--expires", "10000-01-01T00:00:00Z"}, "--expires"},
		{[]string{"--expires", "36600d"}, "--expires"},
		{[]string{"--expires", "1h\x1b[2J"}, "--expires"},
		{[]string{"--name", strings.Repeat("n", 101)}, "--name"},
		{[]string{"--name", "two\nlines"}, "--name"},
		{[]string{"--name", "tab\there"}, "--name"},
		{[]string{"--name", "\x1b[31mred"}, "--name"},
		{[]string{"--label", "team"}, "--label"},
		{[]string{"--label", "Team=x"}, "--label"},
		{[]string{"--label", strings.Repeat("k", 33) + "=x"}, "--label"},
		{[]string{"--label", "k=" + strings.Repeat("v", 201)}, "--label"},
		{[]string{"--label", "name=" + strings.Repeat("v", 201)}, "--label"}, // a label called name is still a label
		{[]string{"--label", "k=a\nb"}, "--label"},
		{[]string{"--label", "k=a", "--label", "k=b"}, "--label"},
		{seventeen, "--label"},
	} {
		code, out, errs := c.run(append(append([]string{}, issue...), tc.args...)...)
		if code != 2 || !strings.Contains(errs, tc.flag) || keyRE.MatchString(out) {
			t.Errorf("issue %q: exit %d, out %q, err %q; want exit 2 naming %s", tc.args, code, out, errs, tc.flag)
		}
		if strings.ContainsAny(errs, "\x1b\t") || strings.Contains(errs, "two\nlines") {
			t.Errorf("issue %q: the message quotes the value: %q", tc.args, errs)
		}
	}
	for _, args := range [][]string{
		{"list", "--expiring", "soon"},
		{"list", "--expiring", "0"},
		{"list", "--expires", "3d"},
		{"list", "--name", "x"},
		{"rotate", "--org", "acme", "--env", "live", "--label", "a=b"},
		{"issue", "--org", "acme", "--tier", "free", "--env", "live", "--expiring", "7d"},
	} {
		if code, out, errs := c.run(args...); code != 2 || keyRE.MatchString(out) || !strings.Contains(errs, "bad usage") {
			t.Errorf("%q: exit %d, out %q, err %q; want exit 2", args, code, out, errs)
		}
	}
	if l := c.must("list", "--json"); strings.Contains(l, "key_") {
		t.Fatalf("refused issues made keys:\n%s", l)
	}
}
