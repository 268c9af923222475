package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/console/consolestore"
)

// bigOrg is the benchmark's organization: 10 000 keys (two live, the rest
// rotated out over the years), 90 days of hourly usage and 48 hours of
// minute usage on the live keys, 10 000 audit entries, 200 organizations.
type bigOrg struct {
	h      *Handler
	orgID  string
	liveID string
	cookie *http.Cookie
}

func newBigOrg(t testing.TB) *bigOrg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := consolestore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	is, err := keystore.Issue(ctx, pool, "big", "paid_beta", keystore.EnvLive)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keystore.Issue(ctx, pool, "big", "paid_beta", keystore.EnvTest); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		// 9 998 retired keys, oldest first, with random hashes.
		`INSERT INTO civicgate.api_keys (id, org_id, env, tier, key_hash, key_prefix, status, created_at, retired_at)
		 SELECT 'key_old' || g, $1, 'live', 'paid_beta', sha256(('k' || g)::bytea), 'cg_live_old', 'rotated',
		        now() - (10000 - g) * interval '1 hour' - interval '400 days', now() - (10000 - g) * interval '1 hour' - interval '399 days'
		 FROM generate_series(1, 9998) g`,
		`INSERT INTO civicgate.usage_hour (key_id, org_id, start, admitted, refused, client_errors, server_errors, cost)
		 SELECT $2, $1, date_trunc('hour', now()) - h * interval '1 hour', 500 + h % 97, h % 5, h % 11, h % 3, 20000 + h
		 FROM generate_series(0, 90*24) h`,
		`INSERT INTO civicgate.usage_minute (key_id, org_id, start, admitted, refused, client_errors, server_errors, cost)
		 SELECT $2, $1, date_trunc('minute', now()) - m * interval '1 minute', 8 + m % 7, m % 2, m % 3, 0, 300
		 FROM generate_series(0, 48*60) m`,
		`INSERT INTO civicgate.audit_log (actor, role, org_id, action, target, detail, client_addr, at)
		 SELECT 'admin@big.example', 'admin', $1, 'key.rotate', 'key_old' || g, 'live, overlap 24h', '192.0.2.1', now() - g * interval '1 minute'
		 FROM generate_series(1, 10000) g`,
		`INSERT INTO civicgate.organizations (id, name) SELECT 'org_other' || g, 'other' || g FROM generate_series(1, 200) g`,
		// 300 operations run hourly for 30 days by the live key, each
		// reading four coordinates; every tenth reads one of three
		// deprecated ones (the Operations page).
		`INSERT INTO civicgate.operations (op_hash, op_type, op_name, normalized, first_seen, last_seen)
		 SELECT lpad(to_hex(g), 64, '0'), 'query', 'Operation' || g, 'query Operation' || g || '{f}', now() - interval '30 days', now()
		 FROM generate_series(1, 300) g`,
		`INSERT INTO civicgate.operation_coordinates (op_hash, coordinate, deprecated_reason)
		 SELECT lpad(to_hex(g), 64, '0'), c, CASE WHEN c LIKE 'Query.old%' THEN 'use Query.new' || (g % 3) END
		 FROM generate_series(1, 300) g, LATERAL (VALUES ('Query.f' || (g % 50)), ('Type' || (g % 20) || '.x'), ('Common.id'),
		   (CASE WHEN g % 10 = 0 THEN 'Query.old' || (g % 3) ELSE 'Common.name' END)) AS v(c)`,
		`INSERT INTO civicgate.usage_operation_hour (key_id, org_id, start, op_hash, op_type, op_name, requests, errors, cost, latency_buckets, last_seen)
		 SELECT $2, $1, date_trunc('hour', now()) - h * interval '1 hour', lpad(to_hex(g), 64, '0'), 'query', 'Operation' || g,
		   1 + (g + h) % 7, (g + h) % 2, 3, array_fill(1::bigint, ARRAY[16]), date_trunc('hour', now()) - h * interval '1 hour'
		 FROM generate_series(1, 300) g, generate_series(0, 30*24) h`,
		// The organization's sums and key pairs the flush writes beside
		// the key's rows (docs/design.md D83), which the page reads.
		`INSERT INTO civicgate.usage_operation_org_hour (org_id, start, op_hash, op_type, op_name, requests, errors, cost, latency_buckets, last_seen)
		 SELECT org_id, start, op_hash, op_type, op_name, requests, errors, cost, latency_buckets, last_seen
		 FROM civicgate.usage_operation_hour WHERE org_id = $1`,
		`INSERT INTO civicgate.usage_operation_keys (org_id, op_hash, key_id, last_start)
		 SELECT org_id, op_hash, key_id, max(start) FROM civicgate.usage_operation_hour WHERE org_id = $1 GROUP BY 1, 2, 3`,
		`ANALYZE`,
	} {
		args := []any{is.OrgID, is.ID}
		switch {
		case !strings.Contains(q, "$1"):
			args = nil
		case !strings.Contains(q, "$2"):
			args = args[:1]
		}
		if _, err := pool.Exec(ctx, q, args...); err != nil {
			t.Fatalf("seed: %v\n%s", err, q)
		}
	}
	h := &Handler{pool: pool, logger: zap.NewNop()}
	h.timeout.idle, h.timeout.lifetime = time.Hour, 12*time.Hour
	if h.tiers, err = parseTiers(map[string]TierConfig{
		"paid_beta": {Rates: "100/m,20000/d", CostBudget: "200000/h", Families: []string{"bills", "members"}},
	}); err != nil {
		t.Fatal(err)
	}
	if h.pages, err = parsePages(); err != nil {
		t.Fatal(err)
	}
	h.serve = h.routes()
	tok, err := consolestore.NewSession(ctx, pool, consolestore.Identity{Email: "op@big.example", Role: keystore.RoleOperator},
		"link", "192.0.2.1", consolestore.Timeouts{Idle: time.Hour, Lifetime: 12 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return &bigOrg{h: h, orgID: is.OrgID, liveID: is.ID, cookie: &http.Cookie{Name: SessionCookie, Value: tok}}
}

// get serves one GET of path as the operator and returns the recorder.
func (b *bigOrg) get(path string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "https://console.example.org"+path, nil)
	r.AddCookie(b.cookie)
	w := httptest.NewRecorder()
	_ = b.h.ServeHTTP(w, r, nil)
	return w
}

// pages are the pages the benchmark and the weight test render.
func (b *bigOrg) pages() map[string]string {
	o := "/orgs/" + b.orgID
	return map[string]string{
		"overview":       o + "/",
		"keys":           o + "/keys",
		"usage-24h":      o + "/usage",
		"usage-7d":       o + "/usage?range=7d",
		"usage-90d":      o + "/usage?range=90d",
		"usage-90d-key":  o + "/usage?range=90d&key=" + b.liveID,
		"operations-30d": o + "/operations?window=30d",
		"audit":          o + "/audit",
		"organizations":  "/orgs",
		"revoke-confirm": o + "/keys/" + b.liveID + "/revoke",
	}
}
