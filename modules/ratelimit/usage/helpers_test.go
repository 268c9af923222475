package usage

import (
	"context"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// migratedDB returns the DSN of a fresh database holding the key store's
// tables (the usage reads look organizations up) and the usage tables.
func migratedDB(t *testing.T) string {
	t.Helper()
	dsn := testenv.Postgres(t)
	pool := newPool(t, dsn)
	if err := keystore.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	if err := Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	return dsn
}

func newPool(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// proxied returns dsn with its host:port replaced by a testenv.Proxy's, and
// the proxy.
func proxied(t *testing.T, dsn string) (string, *testenv.Proxy) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	if u.Port() == "" {
		target = u.Hostname() + ":5432"
	}
	p := testenv.NewProxy(t, target)
	u.Host = p.Addr()
	q := u.Query()
	q.Set("connect_timeout", "2")
	u.RawQuery = q.Encode()
	return u.String(), p
}

// tableRows reads a whole usage table as rows keyed "key_id start".
func tableRows(t *testing.T, pool *pgxpool.Pool, table string) map[string]Row {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT key_id, org_id, start, admitted, refused, client_errors, server_errors, cost, mcp_calls FROM `+table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]Row{}
	for rows.Next() {
		var r Row
		if err := rows.Scan(&r.KeyID, &r.OrgID, &r.Start, &r.Admitted, &r.Refused, &r.ClientErrors, &r.ServerErrors, &r.Cost, &r.MCP); err != nil {
			t.Fatal(err)
		}
		r.Start = r.Start.UTC()
		out[r.KeyID+" "+r.Start.Format("2006-01-02T15:04")] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
