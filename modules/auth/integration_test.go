package auth

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

func TestRefusals(t *testing.T) {
	dsn, pool := migratedDB(t)
	g := startGateway(t, dsn, "1s")
	ctx := context.Background()

	ent := issue(t, pool, "ent", "enterprise", "live")
	free := issue(t, pool, "freeorg", "free", "live")
	testKey := issue(t, pool, "ent", "enterprise", "test")
	revoked := issue(t, pool, "rev", "enterprise", "live")
	if _, err := keystore.Revoke(ctx, pool, revoked.ID); err != nil {
		t.Fatal(err)
	}
	rotatedOut := issue(t, pool, "rot", "enterprise", "live")
	if _, err := keystore.Rotate(ctx, pool, keystore.RotateSpec{Org: "rot", Env: "live"}); err != nil {
		t.Fatal(err)
	}
	suspended := issue(t, pool, "susp", "enterprise", "live")
	if err := keystore.SetOrgStatus(ctx, pool, "susp", keystore.OrgSuspended); err != nil {
		t.Fatal(err)
	}
	gold := issue(t, pool, "goldorg", "gold", "live") // a tier the config does not define
	unknown, err := keystore.NewKey("live")
	if err != nil {
		t.Fatal(err)
	}

	bills := g.base + "/bills"
	for _, c := range []struct {
		name   string
		url    string
		header []string
		status int
		body   string
	}{
		{"missing", bills, nil, 401, `{"error":"Missing bearer token"}`},
		{"basic scheme", bills, []string{"Authorization", "Basic " + ent.Key}, 401, `{"error":"Malformed authorization header"}`},
		{"empty bearer", bills, []string{"Authorization", "Bearer "}, 401, `{"error":"Malformed authorization header"}`},
		{"garbage", bills, []string{"Authorization", "Bearer not a key"}, 401, `{"error":"Malformed authorization header"}`},
		{"empty header", bills, []string{"Authorization", ""}, 401, `{"error":"Malformed authorization header"}`},
		{"two headers", bills, []string{"Authorization", "Bearer " + ent.Key, "Authorization", "Bearer " + ent.Key}, 401, `{"error":"Malformed authorization header"}`},
		{"token in query only", bills + "?access_token=" + ent.Key, nil, 400, bodyKeyInURLText},
		{"token in query and header", bills + "?api_key=" + ent.Key, []string{"Authorization", "Bearer " + ent.Key}, 400, bodyKeyInURLText},
		{"token percent-encoded in query", bills + "?access_token=cg%5flive%5f" + ent.Key[8:], nil, 400, bodyKeyInURLText},
		{"token in path", bills + "/" + ent.Key, []string{"Authorization", "Bearer " + ent.Key}, 400, bodyKeyInURLText},
		{"unknown", bills, []string{"Authorization", "Bearer " + unknown}, 401, `{"error":"Invalid API key"}`},
		{"revoked", bills, []string{"Authorization", "Bearer " + revoked.Key}, 401, `{"error":"API key revoked"}`},
		{"rotated out", bills, []string{"Authorization", "Bearer " + rotatedOut.Key}, 401, `{"error":"API key rotated out"}`},
		{"other environment", bills, []string{"Authorization", "Bearer " + testKey.Key}, 401, `{"error":"API key not valid in this environment"}`},
		{"suspended", bills, []string{"Authorization", "Bearer " + suspended.Key}, 403, `{"error":"Organization suspended"}`},
		{"tier not entitled", g.base + "/changes", []string{"Authorization", "Bearer " + free.Key}, 403, `{"error":"Tier not entitled to this endpoint family"}`},
		{"unknown tier", bills, []string{"Authorization", "Bearer " + gold.Key}, 403, `{"error":"Tier not entitled to this endpoint family"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := get(t, c.url, c.header...)
			expectRefusal(t, got, c.status, c.body)
			// Only require_family's refusal names the family (docs/design.md
			// D41): an unknown tier has no family to name.
			want := ""
			if c.name == "tier not entitled" {
				want = "changes"
			}
			if v := got.header.Values(contract.HeaderRefusedFamily); strings.Join(v, "|") != want {
				t.Fatalf("%s %q, want %q", contract.HeaderRefusedFamily, v, want)
			}
		})
	}
	if all := g.upstream.all(); all != "" {
		t.Fatalf("refused requests reached the upstream:\n%s", all)
	}

	t.Run("allowed", func(t *testing.T) {
		for _, k := range []keystore.Issued{ent, free} {
			if got := get(t, bills, "Authorization", "Bearer "+k.Key); got.status != 200 || got.body != "upstream ok" {
				t.Fatalf("%s: %d %q", k.ID, got.status, got.body)
			}
		}
		if got := get(t, g.base+"/changes", "Authorization", "bearer "+ent.Key); got.status != 200 {
			t.Fatalf("enterprise /changes: %d %q", got.status, got.body)
		}
	})
}

func TestPlaceholdersAndUpstreamHeaders(t *testing.T) {
	dsn, pool := migratedDB(t)
	g := startGateway(t, dsn, "1s")
	ent := issue(t, pool, "acme", "enterprise", "live")

	got := get(t, g.base+"/echo", "Authorization", "Bearer "+ent.Key)
	want := ent.ID + "|" + ent.OrgID + "|enterprise|live|1000/m,100000/d|bills,members,changes|500000/h"
	if got.status != 200 || got.body != want {
		t.Fatalf("placeholders: %d %q, want %q", got.status, got.body, want)
	}
	free := issue(t, pool, "acme-free", "free", "live") // one rate, no cost budget: {civic.cost_budget} is ""
	got = get(t, g.base+"/echo", "Authorization", "Bearer "+free.Key)
	if want := free.ID + "|" + free.OrgID + "|free|live|30/m|bills,members|"; got.status != 200 || got.body != want {
		t.Fatalf("placeholders of a tier without a cost budget: %d %q, want %q", got.status, got.body, want)
	}

	forged, err := contract.SignIdentity([]byte(testSecret), contract.Caller{KeyID: "key_forged", Org: "evil", Tier: "enterprise", Env: "live"}, time.Now(), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got = get(t, g.base+"/bills?q=x", "Authorization", "Bearer "+ent.Key,
		"X-Civic-Identity", forged, "X-Civic-Tier", "enterprise", "x-civic-org", "evil", "X-Other", "kept")
	if got.status != 200 {
		t.Fatalf("%d %q", got.status, got.body)
	}
	up := g.upstream.last(t)
	if v := up.header.Values("Authorization"); len(v) != 0 {
		t.Fatalf("Authorization forwarded: %q", v)
	}
	for k := range up.header {
		if strings.HasPrefix(k, "X-Civic-") && k != contract.IdentityHeader {
			t.Fatalf("client header %s forwarded", k)
		}
	}
	if up.header.Get("X-Other") != "kept" {
		t.Fatal("unrelated header dropped")
	}
	ids := up.header.Values(contract.IdentityHeader)
	if len(ids) != 1 || ids[0] == forged {
		t.Fatalf("identity header %q", ids)
	}
	claims, err := contract.VerifyIdentity([]byte(testSecret), ids[0], time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if claims.KeyID() != ent.ID || claims.Org != ent.OrgID || claims.Tier != "enterprise" || claims.Env != "live" {
		t.Fatalf("claims %+v", claims)
	}
	if ttl := time.Until(claims.ExpiresAt.Time); ttl <= 0 || ttl > 30*time.Second {
		t.Fatalf("assertion expires in %s", ttl)
	}

	// The token never reaches the upstream or the logs.
	if strings.Contains(g.upstream.all(), ent.Key) {
		t.Fatal("token reached the upstream")
	}
	logs, err := os.ReadFile(g.logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logs), "/bills") {
		t.Fatalf("log capture is not working (no access log line):\n%s", logs)
	}
	if strings.Contains(string(logs), ent.Key) || strings.Contains(string(logs), ent.Key[keystore.PrefixLen:]) {
		t.Fatal("token appears in the logs")
	}
}

func TestRevocationOnSameGateway(t *testing.T) {
	dsn, pool := migratedDB(t)
	// A long TTL: only LISTEN/NOTIFY can make revocation visible in time.
	g := startGateway(t, dsn, "1m")
	k := issue(t, pool, "acme", "enterprise", "live")
	if got := get(t, g.base+"/bills", "Authorization", "Bearer "+k.Key); got.status != 200 {
		t.Fatalf("%d %q", got.status, got.body)
	}
	ctx := context.Background()
	if err := keystore.SetOrgStatus(ctx, pool, "acme", keystore.OrgSuspended); err != nil {
		t.Fatal(err)
	}
	awaitBody(t, g.base+"/bills", k.Key, `{"error":"Organization suspended"}`, notifyWithin)
	if err := keystore.SetOrgStatus(ctx, pool, "acme", keystore.OrgActive); err != nil {
		t.Fatal(err)
	}
	awaitBody(t, g.base+"/bills", k.Key, "upstream ok", notifyWithin)
	if _, err := keystore.Revoke(ctx, pool, k.ID); err != nil {
		t.Fatal(err)
	}
	awaitBody(t, g.base+"/bills", k.Key, `{"error":"API key revoked"}`, notifyWithin)
}

func TestPostgresDown(t *testing.T) {
	dsn, pool := migratedDB(t)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewProxy(t, fmt.Sprintf("%s:%d", cfg.ConnConfig.Host, cfg.ConnConfig.Port))
	host, port, _ := strings.Cut(proxy.Addr(), ":")
	viaProxy := strings.Replace(dsn, fmt.Sprintf("%s:%d", cfg.ConnConfig.Host, cfg.ConnConfig.Port), host+":"+port, 1)
	if viaProxy == dsn {
		t.Fatalf("could not point the DSN at the proxy")
	}
	const ttl = 200 * time.Millisecond
	g := startGateway(t, viaProxy, ttl.String())
	k := issue(t, pool, "acme", "enterprise", "live")
	if got := get(t, g.base+"/bills", "Authorization", "Bearer "+k.Key); got.status != 200 {
		t.Fatalf("%d %q", got.status, got.body)
	}

	proxy.Cut()
	// Past several TTLs, the cached key keeps working.
	start := time.Now()
	for time.Since(start) < 4*ttl {
		if got := get(t, g.base+"/bills", "Authorization", "Bearer "+k.Key); got.status != 200 {
			t.Fatalf("cached key with PostgreSQL down: %d %q", got.status, got.body)
		}
	}
	unknown, err := keystore.NewKey("live")
	if err != nil {
		t.Fatal(err)
	}
	expectRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+unknown), 500, `{"error":"Internal Server Error"}`)
	other := issue(t, pool, "other", "free", "live") // exists, but the gateway cannot see the store
	expectRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+other.Key), 500, `{"error":"Internal Server Error"}`)

	proxy.Restore()
	awaitBody(t, g.base+"/bills", other.Key, "upstream ok", 20*time.Second)
	expectRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+unknown), 401, `{"error":"Invalid API key"}`)

	logs, err := os.ReadFile(g.logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{k.Key, unknown, other.Key, cfg.ConnConfig.Password} {
		if secret != "" && strings.Contains(string(logs), secret) {
			t.Fatal("a secret appears in the logs")
		}
	}
}
