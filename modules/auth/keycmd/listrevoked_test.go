package keycmd

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestKeysCLIListRevokedRotatingKey: a key revoked during its rotation
// overlap never rotates out, so `keys list` shows no ROTATES_OUT for it
// (`-`, rotates_out_at null) — it used to show the overlap's future end. A
// key revoked after its overlap ended keeps the time it rotated out.
func TestKeysCLIListRevokedRotatingKey(t *testing.T) {
	for _, s := range bothStores(t) {
		t.Run(s.name, func(t *testing.T) {
			s.c.t = t
			idA, _ := issuedKey(t, s.must("issue", "--org", "acme", "--tier", "free", "--env", "live"))
			s.must("rotate", "--org", "acme", "--env", "live", "--overlap", "24h")
			if k := listJSON(t, s, "--org", "acme").find(idA); k.Status != "rotating" || k.RotatesOutAt == nil {
				t.Fatalf("before the revoke: %+v, want rotating with a rotates_out_at", k)
			}
			s.must("revoke", idA)
			k := listJSON(t, s, "--org", "acme").find(idA)
			if k.Status != "revoked" || k.RetiredAt == nil || k.RotatesOutAt != nil {
				t.Fatalf("revoked during its overlap: %+v, want revoked, retired, rotates_out_at null", k)
			}
			if got := rotatesOutColumn(t, s.must("list", "--org", "acme"), idA); got != "-" {
				t.Fatalf("ROTATES_OUT of the revoked key: %q, want -", got)
			}

			// Rotated out first (overlap 1s), revoked afterwards: it did rotate out, at its deadline.
			s.must("revoke", s.activeKey(t, "acme"))
			idB, _ := issuedKey(t, s.must("issue", "--org", "beta", "--tier", "free", "--env", "live"))
			s.must("rotate", "--org", "beta", "--env", "live", "--overlap", "1s")
			testenv.EventuallyTrue(t, 30*time.Second, "B to rotate out", func() bool {
				return listJSON(t, s, "--org", "beta").find(idB).Status == "rotated"
			})
			s.must("revoke", idB)
			b := listJSON(t, s, "--org", "beta").find(idB)
			if b.Status != "revoked" || b.RotatesOutAt == nil || b.RetiredAt == nil || !b.RetiredAt.Equal(*b.RotatesOutAt) {
				t.Fatalf("revoked after rotating out: %+v, want rotates_out_at = retired_at", b)
			}
			if got := rotatesOutColumn(t, s.must("list", "--org", "beta"), idB); got == "-" {
				t.Fatalf("ROTATES_OUT of a key that rotated out before its revocation: %q", got)
			}
		})
	}
}

// activeKey returns the id of org's active key.
func (s store) activeKey(t *testing.T, org string) string {
	t.Helper()
	for _, k := range listJSON(t, s, "--org", org).Keys {
		if k.Status == "active" {
			return k.ID
		}
	}
	t.Fatalf("%s has no active key", org)
	return ""
}

// rotatesOutColumn returns the ROTATES_OUT cell of key id in a `keys list` table.
func rotatesOutColumn(t *testing.T, table, id string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(table), "\n")
	header := strings.Fields(lines[0])
	col := slices.Index(header, "ROTATES_OUT")
	if col < 0 {
		t.Fatalf("no ROTATES_OUT column in %q", lines[0])
	}
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) == len(header) && f[0] == id {
			return f[col]
		}
	}
	t.Fatalf("no row for %s in\n%s", id, table)
	return ""
}
