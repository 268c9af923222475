package keycmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

var keyRE = regexp.MustCompile(`cg_(live|test)_[0-9A-Za-z]{43}`)

type cli struct {
	t   *testing.T
	dsn string
}

func (c cli) run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, &out, &errb, func(k string) string {
		if k == "DATABASE_URL" {
			return c.dsn
		}
		return ""
	})
	return code, out.String(), errb.String()
}

func (c cli) must(args ...string) string {
	code, out, errs := c.run(args...)
	if code != 0 {
		c.t.Fatalf("keys %v: exit %d: %s", args, code, errs)
	}
	return out
}

func issuedKey(t *testing.T, out string) (id, key string) {
	t.Helper()
	keys := keyRE.FindAllString(out, -1)
	if len(keys) != 1 {
		t.Fatalf("want the key printed exactly once, got %d in %q", len(keys), out)
	}
	m := regexp.MustCompile(`Key ID: (key_\w+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no key id in %q", out)
	}
	return m[1], keys[0]
}

func TestKeysCLIFlows(t *testing.T) {
	c := cli{t, testenv.Postgres(t)}
	c.must("migrate")
	c.must("migrate") // idempotent

	id1, k1 := issuedKey(t, c.must("issue", "--org", "acme", "--tier", "free", "--env", "live"))
	id2, k2 := issuedKey(t, c.must("issue", "--org", "acme", "--tier", "free", "--env", "live"))
	if k1 == k2 || id1 == id2 {
		t.Fatal("two issues returned the same key or id")
	}
	code, out, errs := c.run("issue", "--org", "acme", "--tier", "free", "--env", "live")
	if code == 0 || keyRE.MatchString(out) || !strings.Contains(errs, "already has 2 live keys") {
		t.Fatalf("third live key: exit %d, out %q, err %q", code, out, errs)
	}
	// The limit is per environment: a test key is still allowed.
	_, kt := issuedKey(t, c.must("issue", "--org", "acme", "--tier", "free", "--env", "test"))
	if !strings.HasPrefix(kt, "cg_test_") {
		t.Fatalf("test key %q", kt)
	}

	// Rotate retires the oldest live key and keeps its tier.
	rot := c.must("rotate", "--org", "acme", "--env", "live", "--overlap", "0")
	id3, k3 := issuedKey(t, rot)
	if !strings.Contains(rot, "Rotated out: "+id1) {
		t.Fatalf("rotate did not retire the oldest key %s: %q", id1, rot)
	}

	ctx := context.Background()
	pool := newPool(t, c.dsn)
	for key, want := range map[string]string{k1: "rotated", k2: "active", k3: "active"} {
		rec, err := keystore.Lookup(ctx, pool, keystore.HashKey(key))
		if err != nil || rec.Status != want || rec.Tier != "free" {
			t.Fatalf("after rotate: %+v %v, want status %s", rec, err, want)
		}
	}
	c.must("revoke", id2)
	if rec, _ := keystore.Lookup(ctx, pool, keystore.HashKey(k2)); rec.Status != "revoked" {
		t.Fatalf("after revoke: %+v", rec)
	}
	if code, _, _ := c.run("revoke", "key_nope"); code == 0 {
		t.Fatal("revoking an unknown key succeeded")
	}

	c.must("suspend", "--org", "acme")
	if rec, _ := keystore.Lookup(ctx, pool, keystore.HashKey(k3)); rec.OrgStatus != "suspended" {
		t.Fatalf("after suspend: %+v", rec)
	}
	c.must("resume", "--org", "acme")
	if rec, _ := keystore.Lookup(ctx, pool, keystore.HashKey(k3)); rec.OrgStatus != "active" {
		t.Fatalf("after resume: %+v", rec)
	}
	if code, _, _ := c.run("suspend", "--org", "nobody"); code == 0 {
		t.Fatal("suspending an unknown organization succeeded")
	}

	c.must("issue", "--org", "other", "--tier", "enterprise", "--env", "live")
	list := c.must("list")
	only := c.must("list", "--org", "acme")
	for _, k := range []string{k1, k2, k3, kt} {
		h := keystore.HashKey(k).String()
		if strings.Contains(list, k) || strings.Contains(list, h) || strings.Contains(list, k[keystore.PrefixLen:keystore.PrefixLen+8]) {
			t.Fatalf("list shows a key or hash:\n%s", list)
		}
	}
	for _, want := range []string{id1, id2, id3, "rotated", "revoked", "active", k3[:keystore.PrefixLen], "other"} {
		if !strings.Contains(list, want) {
			t.Fatalf("list lacks %q:\n%s", want, list)
		}
	}
	if strings.Contains(only, "other") || !strings.Contains(only, id3) {
		t.Fatalf("list --org acme:\n%s", only)
	}
}

func newPool(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func TestKeysCLIUsageErrors(t *testing.T) {
	c := cli{t, testenv.Postgres(t)}
	c.must("migrate")
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"issue", "--org", "acme", "--env", "live"},
		{"issue", "--org", "acme", "--tier", "free", "--env", "prod"},
		{"issue", "--org", "acme", "--tier", "Free Tier", "--env", "live"},
		{"rotate", "--org", "acme", "--env", "live"}, // nothing to rotate
		{"revoke"},
		{"list", "extra"},
	} {
		if code, out, _ := c.run(args...); code == 0 || keyRE.MatchString(out) {
			t.Errorf("keys %v: exit %d, out %q", args, code, out)
		}
	}
	var none cli
	none.t = t
	if code, _, errs := none.run("list"); code == 0 || !strings.Contains(errs, "DATABASE_URL") {
		t.Fatalf("without DATABASE_URL: exit %d %q", code, errs)
	}
}

func TestKeysCLIFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.json")
	c := cli{t: t}
	_, k1 := issuedKey(t, c.must("issue", "--file", path, "--org", "acme", "--tier", "free", "--env", "live"))
	issuedKey(t, c.must("issue", "--file", path, "--org", "acme", "--tier", "free", "--env", "live"))
	if code, _, _ := c.run("issue", "--file", path, "--org", "acme", "--tier", "free", "--env", "live"); code == 0 {
		t.Fatal("third live key accepted by the file store")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), k1) || !strings.Contains(string(data), keystore.HashKey(k1).String()) {
		t.Fatalf("keys file must hold the hash, not the key:\n%s", data)
	}
	f, err := keystore.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := f.Index()
	if err != nil {
		t.Fatal(err)
	}
	if rec, ok := idx[keystore.HashKey(k1)]; !ok || rec.Status != "active" || rec.OrgName != "acme" || rec.Env != "live" {
		t.Fatalf("file index: %+v %v", rec, ok)
	}
}
