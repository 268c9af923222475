package keycmd

import (
	"regexp"
	"testing"
)

// TestKeysHelpOnce: every subcommand's --help prints the house help of
// `civicgate keys --help` once on stderr and exits 0 (before, the flag
// package's own block answered, with exit 2); a bad flag prints its error
// and that help, exit 2.
func TestKeysHelpOnce(t *testing.T) {
	c := cli{t: t}
	for _, args := range [][]string{
		{"--help"}, {"issue", "--help"}, {"rotate", "-h"}, {"revoke", "--help"}, {"list", "--help"},
		{"set-tier", "--help"}, {"usage", "--help"}, {"usage", "-h"},
	} {
		if code, out, errs := c.run(args...); code != 0 || out != "" || errs != usageText {
			t.Errorf("keys %q: exit %d, stdout %q, stderr %q; want exit 0 and the help once", args, code, out, errs)
		}
	}
	for _, tc := range []struct{ args []string }{{[]string{"issue", "--bogus"}}, {[]string{"usage", "--bogus"}}} {
		want := "civicgate keys " + tc.args[0] + ": bad usage: flag provided but not defined: -bogus\n" + usageText
		if code, out, errs := c.run(tc.args...); code != 2 || out != "" || errs != want {
			t.Errorf("keys %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errs, want)
		}
	}
}

// TestKeysRevokeNewerKeyDuringOverlap: revoking the new key while the old
// one is rotating out warns that the organization is left with a key that
// stops working at the end of the overlap and says what to do; the next
// rotate says what to do too; refusals carry no package prefix. The same
// with the database and a keys file.
func TestKeysRevokeNewerKeyDuringOverlap(t *testing.T) {
	rotating := regexp.MustCompile(`Rotating until (\S+): (key_\w+)`)
	for _, s := range bothStores(t) {
		t.Run(s.name, func(t *testing.T) {
			s.must("issue", "--org", "acme", "--tier", "free", "--env", "live")
			out := s.must("rotate", "--org", "acme", "--env", "live", "--overlap", "24h")
			newID, _ := issuedKey(t, out)
			m := rotating.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no rotating key in %q", out)
			}
			until, oldID := m[1], m[2]

			code, out, errs := s.run("revoke", newID)
			wantWarning := "warning: organization acme is left with no active live key, only " + oldID + ", which stops working at " +
				until + " (the end of its rotation overlap).\n" +
				"  Issue a new key before then: civicgate keys issue --org acme --tier free --env live\n"
			if code != 0 || out != "Revoked: "+newID+"\n" || errs != wantWarning {
				t.Fatalf("revoke: exit %d, stdout %q, stderr %q; want the warning %q", code, out, errs, wantWarning)
			}
			code, out, errs = s.run("rotate", "--org", "acme", "--env", "live")
			wantRotate := "civicgate keys rotate: organization acme has no active live key to rotate (a key rotating out is not rotated again); " +
				"issue a new one: civicgate keys issue --org acme --tier TIER --env live\n"
			if code != 1 || out != "" || errs != wantRotate {
				t.Fatalf("rotate: exit %d, stdout %q, stderr %q; want %q", code, out, errs, wantRotate)
			}
			// Issuing, as told, leaves an active key; revoking the old one then warns of nothing.
			s.must("issue", "--org", "acme", "--tier", "free", "--env", "live")
			if code, _, errs := s.run("revoke", oldID); code != 0 || errs != "" {
				t.Fatalf("revoke the rotating key: exit %d, stderr %q", code, errs)
			}
			for _, tc := range []struct {
				args []string
				want string
			}{
				{[]string{"revoke", "key_nope"}, "civicgate keys revoke: no such key: key_nope (`civicgate keys list` shows the ids)\n"},
				{[]string{"suspend", "--org", "nobody"}, "civicgate keys suspend: no such organization: nobody (`civicgate keys list` shows them)\n"},
			} {
				if code, _, errs := s.run(tc.args...); code != 1 || errs != tc.want {
					t.Errorf("keys %q: exit %d, stderr %q; want exit 1 and %q", tc.args, code, errs, tc.want)
				}
			}
		})
	}
}
