package keycmd

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// store is one place the CLI keeps keys: PostgreSQL (args as given) or a
// keys file (--file appended to every command).
type store struct {
	name   string
	c      cli
	file   string
	record func(t *testing.T, key string) keystore.Record
}

func (s store) args(a ...string) []string {
	if s.file != "" {
		return append(a, "--file", s.file)
	}
	return a
}
func (s store) must(a ...string) string { return s.c.must(s.args(a...)...) }
func (s store) run(a ...string) (int, string, string) {
	return s.c.run(s.args(a...)...)
}

// refused runs a command that must exit 1 with want in its error output and
// print no key.
func (s store) refused(t *testing.T, want string, a ...string) {
	t.Helper()
	code, out, errs := s.run(a...)
	if code != 1 || !strings.Contains(errs, want) || keyRE.MatchString(out) {
		t.Fatalf("keys %v: exit %d, out %q, err %q; want exit 1 and %q", a, code, out, errs, want)
	}
}

func (s store) status(t *testing.T, key string) string {
	t.Helper()
	r := s.record(t, key)
	return r.EffectiveStatus(time.Now())
}

// bothStores returns the PostgreSQL store (its own database) and a keys file.
func bothStores(t *testing.T) []store {
	dsn := testenv.Postgres(t)
	pg := store{name: "postgres", c: cli{t, dsn}}
	pg.c.must("migrate")
	pool := newPool(t, dsn)
	pg.record = func(t *testing.T, key string) keystore.Record {
		t.Helper()
		r, err := keystore.Lookup(context.Background(), pool, keystore.HashKey(key))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	file := store{name: "file", c: cli{t: t}, file: filepath.Join(t.TempDir(), "keys.json")}
	file.record = func(t *testing.T, key string) keystore.Record {
		t.Helper()
		f, err := keystore.ReadFile(file.file)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := f.Index()
		if err != nil {
			t.Fatal(err)
		}
		r, ok := idx[keystore.HashKey(key)]
		if !ok {
			t.Fatal("key not in the file")
		}
		return r
	}
	return []store{pg, file}
}

// TestKeysCLISameRulesBothStores runs one flow on PostgreSQL and on a keys
// file: every key command works with --file and the rules are the same —
// two live keys, rotation with an overlap (the rotating key counts as live),
// revoke of a revoked key refused, suspend and resume, delete-org.
func TestKeysCLISameRulesBothStores(t *testing.T) {
	for _, s := range bothStores(t) {
		t.Run(s.name, func(t *testing.T) {
			s.c.t = t
			idA, kA := issuedKey(t, s.must("issue", "--org", "acme", "--tier", "free", "--env", "live"))
			idB, kB := issuedKey(t, s.must("issue", "--org", "acme", "--tier", "free", "--env", "live"))
			s.refused(t, "already has 2 live keys", "issue", "--org", "acme", "--tier", "free", "--env", "live")
			// With two active keys an overlap would make a third live key.
			s.refused(t, "rotate with --overlap 0", "rotate", "--org", "acme", "--env", "live")
			s.refused(t, "no such organization", "rotate", "--org", "nobody", "--env", "live")
			if out := s.must("revoke", idB); out != "Revoked: "+idB+"\n" {
				t.Fatalf("revoke: %q", out)
			}
			s.refused(t, "was already revoked at ", "revoke", idB)
			s.refused(t, "no such key", "revoke", "key_nope")

			// rotate: default overlap 24h; A keeps working as "rotating".
			before := time.Now()
			rot := s.must("rotate", "--org", "acme", "--env", "live", "--tier", "enterprise")
			idC, kC := issuedKey(t, rot)
			m := regexp.MustCompile(`Rotating until (\S+): ` + idA + ` `).FindStringSubmatch(rot)
			if m == nil || strings.Contains(rot, "Rotated out") {
				t.Fatalf("rotate output %q", rot)
			}
			until, err := time.Parse(time.RFC3339, m[1])
			if err != nil || until.Before(before.Add(24*time.Hour-time.Minute)) || until.After(time.Now().Add(24*time.Hour+time.Minute)) {
				t.Fatalf("overlap end %q (%v), want about 24h from now", m[1], err)
			}
			if got := s.status(t, kA); got != keystore.StatusRotating {
				t.Fatalf("A after rotate: %s", got)
			}
			if r := s.record(t, kC); r.Tier != "enterprise" || r.Status != keystore.StatusActive {
				t.Fatalf("C: %+v", r)
			}
			// The rotating key is one of the two live keys.
			s.refused(t, "already has 2 live keys", "issue", "--org", "acme", "--tier", "free", "--env", "live")
			list := listJSON(t, s, "--org", "acme")
			if k := list.find(idA); k.Status != "rotating" || k.RotatesOutAt == nil || !k.RotatesOutAt.Truncate(time.Second).Equal(until) {
				t.Fatalf("list shows A as %+v, want rotating until %s", k, until)
			}
			if table := s.must("list", "--org", "acme"); !strings.Contains(table, "ROTATES_OUT") || !strings.Contains(table, m[1]) {
				t.Fatalf("list table lacks the overlap end %s:\n%s", m[1], table)
			}

			// A second rotate ends A's overlap now and starts C's.
			rot = s.must("rotate", "--org", "acme", "--env", "live", "--overlap", "90m")
			idD, kD := issuedKey(t, rot)
			if !strings.Contains(rot, "Rotated out: "+idA+"\n") || !strings.Contains(rot, ": "+idC+" (still accepted") {
				t.Fatalf("second rotate output %q", rot)
			}
			for key, want := range map[string]string{kA: "rotated", kB: "revoked", kC: "rotating", kD: "active"} {
				if got := s.status(t, key); got != want {
					t.Fatalf("after the second rotate: %s, want %s", got, want)
				}
			}
			if out := s.must("revoke", idC); !strings.Contains(out, "Revoked: "+idC+" (it was rotating; its overlap ends now)") {
				t.Fatalf("revoke of a rotating key: %q", out)
			}
			if out := s.must("revoke", idA); !strings.Contains(out, "(it had already been rotated out)") {
				t.Fatalf("revoke of a rotated key: %q", out)
			}
			// --overlap 0: today's immediate rotate-out.
			rot = s.must("rotate", "--org", "acme", "--env", "live", "--overlap", "0")
			_, kE := issuedKey(t, rot)
			if !strings.Contains(rot, "Rotated out: "+idD+"\n") || strings.Contains(rot, "Rotating until") {
				t.Fatalf("rotate --overlap 0: %q", rot)
			}

			s.must("suspend", "--org", "acme")
			if r := s.record(t, kD); r.OrgStatus != keystore.OrgSuspended {
				t.Fatalf("after suspend: %+v", r)
			}
			s.must("resume", "--org", "acme")
			if r := s.record(t, kD); r.OrgStatus != keystore.OrgActive {
				t.Fatalf("after resume: %+v", r)
			}
			s.refused(t, "no such organization", "suspend", "--org", "nobody")

			// delete-org: every key of the organization revoked, in both
			// environments; the organization refused from then on.
			_, kT := issuedKey(t, s.must("issue", "--org", "acme", "--tier", "free", "--env", "test"))
			_, kO := issuedKey(t, s.must("issue", "--org", "other", "--tier", "free", "--env", "live"))
			out := s.must("delete-org", "--org", "acme")
			if !strings.Contains(out, "Organization acme (org_") || !strings.Contains(out, "deleted: 3 key(s) revoked") {
				t.Fatalf("delete-org: %q", out)
			}
			for _, key := range []string{kA, kB, kC, kD, kE, kT} {
				if r := s.record(t, key); r.Status != keystore.StatusRevoked || r.OrgStatus != keystore.OrgDeleted {
					t.Fatalf("after delete-org: %+v", r)
				}
			}
			if r := s.record(t, kO); r.Status != keystore.StatusActive || r.OrgStatus != keystore.OrgActive {
				t.Fatalf("another organization changed: %+v", r)
			}
			for _, a := range [][]string{
				{"issue", "--org", "acme", "--tier", "free", "--env", "live"},
				{"rotate", "--org", "acme", "--env", "live"},
				{"resume", "--org", "acme"},
				{"delete-org", "--org", "acme"},
			} {
				s.refused(t, "organization acme was deleted", a...)
			}
			// Rows are kept for audit.
			if l := listJSON(t, s, "--org", "acme"); len(l.Keys) != 6 || l.Keys[0].OrgStatus != "deleted" {
				t.Fatalf("deleted organization's keys: %+v", l.Keys)
			}
		})
	}
}

// keyList is the output of `keys list --json`.
type keyList struct {
	Keys []listed `json:"keys"`
}

type listed struct {
	ID           string            `json:"id"`
	Org          string            `json:"org"`
	OrgStatus    string            `json:"org_status"`
	Env          string            `json:"env"`
	Tier         string            `json:"tier"`
	Prefix       string            `json:"prefix"`
	Status       string            `json:"status"`
	CreatedAt    time.Time         `json:"created_at"`
	RetiredAt    *time.Time        `json:"retired_at"`
	RotatesOutAt *time.Time        `json:"rotates_out_at"`
	ExpiresAt    *time.Time        `json:"expires_at"`
	Name         string            `json:"name"`
	Labels       map[string]string `json:"labels"`
}

func (l keyList) find(id string) listed {
	for _, k := range l.Keys {
		if k.ID == id {
			return k
		}
	}
	return listed{}
}

func listJSON(t *testing.T, s store, filters ...string) keyList {
	t.Helper()
	out := s.must(append([]string{"list", "--json"}, filters...)...)
	var l keyList
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		t.Fatalf("list --json: %v\n%s", err, out)
	}
	return l
}
