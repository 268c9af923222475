package keycmd

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	webhookstore "github.com/civicgate/civicgate/modules/webhooks/store"
)

// TestKeysCLIOverlapEndsByItself: a rotating key is rotated out at the end of
// its overlap with no command run (list only reads), in both stores; from
// then on it no longer counts as live.
func TestKeysCLIOverlapEndsByItself(t *testing.T) {
	for _, s := range bothStores(t) {
		t.Run(s.name, func(t *testing.T) {
			s.c.t = t
			idA, _ := issuedKey(t, s.must("issue", "--org", "acme", "--tier", "free", "--env", "live"))
			s.must("rotate", "--org", "acme", "--env", "live", "--overlap", "1s")
			testenv.Eventually(t, 30*time.Second, "A to rotate out at its deadline", func() error {
				k := listJSON(t, s, "--org", "acme").find(idA)
				switch {
				case k.Status == "rotated":
					if k.RetiredAt == nil || k.RotatesOutAt == nil || !k.RetiredAt.Equal(*k.RotatesOutAt) {
						t.Fatalf("rotated out at its deadline: %+v", k)
					}
					return nil
				case k.Status != "rotating":
					t.Fatalf("A is %+v", k)
				}
				return fmt.Errorf("A is %s", k.Status)
			})
			// The slot is free again.
			s.must("issue", "--org", "acme", "--tier", "free", "--env", "live")
			s.refused(t, "already has 2 live keys", "issue", "--org", "acme", "--tier", "free", "--env", "live")
		})
	}
}

// TestKeysCLIListFiltersAndUsage: list's --org, --env and --tier narrow the
// list together (table and JSON, both stores); misplaced or bad flags are
// usage errors (exit 2).
func TestKeysCLIListFiltersAndUsage(t *testing.T) {
	for _, s := range bothStores(t) {
		t.Run(s.name, func(t *testing.T) {
			s.c.t = t
			ids := map[string]string{}
			for _, k := range []struct{ org, tier, env string }{
				{"acme", "free", "live"}, {"acme", "enterprise", "test"}, {"beta", "free", "live"}, {"beta", "free", "test"},
			} {
				id, _ := issuedKey(t, s.must("issue", "--org", k.org, "--tier", k.tier, "--env", k.env))
				ids[k.org+"/"+k.tier+"/"+k.env] = id
			}
			for filters, want := range map[string][]string{
				"":                                  {"acme/free/live", "acme/enterprise/test", "beta/free/live", "beta/free/test"},
				"--org acme":                        {"acme/free/live", "acme/enterprise/test"},
				"--env test":                        {"acme/enterprise/test", "beta/free/test"},
				"--tier free":                       {"acme/free/live", "beta/free/live", "beta/free/test"},
				"--tier free --env test":            {"beta/free/test"},
				"--org acme --tier free --env live": {"acme/free/live"},
				"--org nobody":                      {},
			} {
				l := listJSON(t, s, strings.Fields(filters)...)
				table := s.must(append([]string{"list"}, strings.Fields(filters)...)...)
				if len(l.Keys) != len(want) || strings.Count(table, "\n") != len(want)+1 {
					t.Fatalf("list %s: %d keys in JSON, table:\n%s\nwant %v", filters, len(l.Keys), table, want)
				}
				for _, w := range want {
					if l.find(ids[w]).ID == "" || !strings.Contains(table, ids[w]) {
						t.Fatalf("list %s lacks %s", filters, w)
					}
				}
			}
			for _, a := range [][]string{
				{"list", "--env", "prod"},
				{"issue", "--org", "x", "--tier", "free", "--env", "live", "--overlap", "1h"},
				{"revoke", ids["beta/free/live"], "--json"},
				{"rotate", "--org", "acme", "--env", "live", "--overlap", "-1h"},
				{"rotate", "--org", "acme", "--env", "live", "--overlap", "soon"},
				{"delete-org"},
				{"revoke", "a", "b"},
			} {
				if code, out, _ := s.run(a...); code != 2 || keyRE.MatchString(out) {
					t.Errorf("keys %v: exit %d, want 2", a, code)
				}
			}
		})
	}
	if code, _, errs := (cli{t: t}).run("migrate", "--file", filepath.Join(t.TempDir(), "k.json")); code != 2 || !strings.Contains(errs, "no --file") {
		t.Fatalf("migrate --file: exit %d %q", code, errs)
	}
	if code, _, errs := (cli{t: t}).run("list", "--file", filepath.Join(t.TempDir(), "none.json")); code != 1 || !strings.Contains(errs, "does not exist") {
		t.Fatalf("list of a missing keys file: exit %d %q", code, errs)
	}
}

// TestKeysCLIFileConcurrentIssues: commands on one keys file at once never
// lose each other's keys (each holds the file's lock from read to rename).
func TestKeysCLIFileConcurrentIssues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.json")
	const n = 12
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() {
			codes[i], _, _ = (cli{t: t}).run("issue", "--file", path, "--org", fmt.Sprint("org", i), "--tier", "free", "--env", "live")
		})
	}
	wg.Wait()
	f, err := keystore.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Keys) != n {
		t.Fatalf("%d keys in the file after %d concurrent issues (exit codes %v)", len(f.Keys), n, codes)
	}
}

// TestKeysCLIDeleteOrgRemovesWebhookEndpoints: with the webhooks tables
// present, delete-org removes the organization's endpoints and their
// deliveries in the transaction that revokes its keys; other organizations'
// endpoints stay.
func TestKeysCLIDeleteOrgRemovesWebhookEndpoints(t *testing.T) {
	dsn := testenv.Postgres(t)
	c := cli{t, dsn}
	c.must("migrate")
	ctx := context.Background()
	pool := newPool(t, dsn)
	if err := webhookstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	orgOf := map[string]string{}
	for _, org := range []string{"acme", "other"} {
		out := c.must("issue", "--org", org, "--tier", "free", "--env", "live")
		orgOf[org] = strings.Fields(out[strings.Index(out, "Organization: "):])[1]
	}
	for i, org := range []string{"acme", "acme", "other"} {
		id := fmt.Sprint("we_test", i)
		if _, err := pool.Exec(ctx, `INSERT INTO civicgate.webhook_endpoints
			(id, org_id, url, families, secret_sealed, start_seq, created_at, updated_at)
			VALUES ($1, $2, 'https://example.org/hook', '{bills}', '\x00', 0, now(), now())`, id, orgOf[org]); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO civicgate.webhook_deliveries (endpoint_id, kind, event_id, next_attempt_at, created_at)
			VALUES ($1, 'test', gen_random_uuid(), now(), now())`, id); err != nil {
			t.Fatal(err)
		}
	}
	out := c.must("delete-org", "--org", "acme")
	if !strings.Contains(out, "1 key(s) revoked; 2 webhook endpoint(s) removed with their deliveries") {
		t.Fatalf("delete-org: %q", out)
	}
	var endpoints, deliveries int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM civicgate.webhook_endpoints WHERE org_id = $1),
		(SELECT count(*) FROM civicgate.webhook_deliveries)`, orgOf["acme"]).Scan(&endpoints, &deliveries); err != nil {
		t.Fatal(err)
	}
	if endpoints != 0 || deliveries != 1 {
		t.Fatalf("after delete-org: %d endpoints of acme, %d deliveries in all (want 0 and other's 1)", endpoints, deliveries)
	}
	var status string
	if err := pool.QueryRow(ctx, `SELECT status FROM civicgate.organizations WHERE name = 'acme'`).Scan(&status); err != nil || status != "deleted" {
		t.Fatalf("organization status %q %v", status, err)
	}
}
