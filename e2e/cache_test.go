package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/modules/contract"
)

// The response cache on the shipped routes (docs/design.md D35), through the
// real processes: two gateways, one recordsd, one PostgreSQL, one Redis.

const (
	cacheMembersDoc = `{"query":"{ members(input:{state:\"WA\", limit:50}) { items { bioguide_id name } } }"}`
	cacheBadDoc     = `{"query":"{ members(input:{chamber:\"moon\", limit:1}) { items { name } } }"}`
)

func writeLegislators(t *testing.T, name string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "legislators.yaml")
	yaml := strings.Replace(legislatorsYAML, "official_full: Ada Example", "official_full: "+name, 1)
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// BenchmarkCacheStaleness measures the time from a commit that changes a
// member (the UPDATE, its change_events row and the NOTIFY in one
// transaction under the feed's lock, as a sync writes them) to the first
// answer of the gateway that shows it, with one client polling as fast as it
// can. It reports the p50 and p99 of that time (docs/benchmarks-log.md "Response
// cache"; the goal is p99 ≤ 100 ms) and, as a baseline in the same run, the
// time of one uncached answer (a miss right after the change).
func BenchmarkCacheStaleness(b *testing.B) {
	s := stack.New(b, &bins)
	s.Prepare()
	s.StartRecordsd()
	s.Run(bins.Recordsd, "sync", "members", "--file", writeLegislatorsB(b))
	s.StartGateway("caddyfile/Caddyfile.local")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.DSN)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	var stale, answer []time.Duration
	key, polls := "", 0
	for i := 0; b.Loop(); i++ {
		if key == "" || polls > 800 { // an enterprise key allows 1000 a minute
			key, _ = s.IssueKey(fmt.Sprintf("stalebench%d", i), "enterprise", "live")
			polls = 0
		}
		if warm, err := trySend(s, "POST", "/v1/graphql", key, cacheMembersDoc); err != nil || warm.status != 200 {
			b.Fatalf("warm: %v %d %s", err, warm.status, warm.body)
		}
		name := fmt.Sprintf("Ada Version %d", i)
		start := time.Now()
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, contract.ChangeEventsWriteLockSQL); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE members SET name = $1 WHERE member_id = 'Z999001'`, name); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO change_events (family, record_id, type, changed_fields, record, source)
				VALUES ('members', 'Z999001', 'updated', '{name}', '{}'::jsonb, 'bench')`)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		committed := time.Now()
		for {
			sent := time.Now()
			x, err := trySend(s, "POST", "/v1/graphql", key, cacheMembersDoc)
			polls++
			if err != nil {
				b.Fatal(err)
			}
			if strings.Contains(x.body, name) {
				stale = append(stale, time.Since(committed))
				answer = append(answer, time.Since(sent))
				break
			}
			if time.Since(start) > 10*time.Second {
				b.Fatalf("the change never showed: %s", x.body)
			}
		}
	}
	pct := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return float64(d[min(len(d)-1, int(p*float64(len(d))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(stale, 0.5), "stale-p50-ms")
	b.ReportMetric(pct(stale, 0.99), "stale-p99-ms")
	b.ReportMetric(pct(answer, 0.5), "miss-p50-ms")
}

func writeLegislatorsB(b *testing.B) string {
	file := filepath.Join(b.TempDir(), "legislators.yaml")
	if err := os.WriteFile(file, []byte(legislatorsYAML), 0o600); err != nil {
		b.Fatal(err)
	}
	return file
}
