package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// Usage per key (docs/design.md D28): every gateway counts what each key
// did per minute and flushes it to PostgreSQL; `civicgate keys usage`
// prints it.

// usageCounts is one key's counts as `civicgate keys usage --json` prints
// them.
type usageCounts struct {
	Admitted     int64 `json:"admitted"`
	Refused      int64 `json:"refused"`
	ClientErrors int64 `json:"client_errors"`
	ServerErrors int64 `json:"server_errors"`
	Cost         int64 `json:"cost"`
}

// usageOf runs `civicgate keys usage --org org --json` (with by: --by) and
// returns the counts per key id, summed over the rows, and the totals line.
func usageOf(t *testing.T, s *stack.Stack, org string, args ...string) (map[string]usageCounts, usageCounts) {
	t.Helper()
	out := s.Run(s.Bins.Civicgate, append([]string{"keys", "usage", "--org", org, "--json"}, args...)...)
	return parseUsage(t, out)
}

// parseUsage reads `keys usage --json`: the counts per key id, summed over
// the rows, and the totals line.
func parseUsage(t *testing.T, out string) (map[string]usageCounts, usageCounts) {
	t.Helper()
	var doc struct {
		Rows []struct {
			KeyID string `json:"key_id"`
			usageCounts
		} `json:"rows"`
		Totals usageCounts `json:"totals"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("keys usage --json: %v\n%s", err, out)
	}
	per := map[string]usageCounts{}
	for _, r := range doc.Rows {
		c := per[r.KeyID]
		c.Admitted += r.Admitted
		c.Refused += r.Refused
		c.ClientErrors += r.ClientErrors
		c.ServerErrors += r.ServerErrors
		c.Cost += r.Cost
		per[r.KeyID] = c
	}
	return per, doc.Totals
}

// sameUsage compares what keys usage printed for an organization with what
// its keys' clients saw: nil when equal; an error naming the difference
// otherwise, fatal when a count already exceeds what was sent (counts only
// grow, so waiting cannot fix it).
func sameUsage(t *testing.T, got map[string]usageCounts, total usageCounts, want map[string]*usageCounts) error {
	t.Helper()
	var sum usageCounts
	for id, w := range want {
		g := got[id]
		if g.Admitted > w.Admitted || g.Refused > w.Refused || g.ClientErrors > w.ClientErrors ||
			g.ServerErrors > w.ServerErrors || g.Cost > w.Cost {
			t.Fatalf("usage of %s is %+v, more than the clients saw: %+v", id, g, *w)
		}
		if g != *w {
			return fmt.Errorf("usage of %s is %+v, want %+v", id, g, *w)
		}
		sum.Admitted += w.Admitted
		sum.Refused += w.Refused
		sum.ClientErrors += w.ClientErrors
		sum.ServerErrors += w.ServerErrors
		sum.Cost += w.Cost
	}
	if len(got) != len(want) {
		t.Fatalf("usage names keys %v, want only %d", got, len(want))
	}
	if total != sum {
		t.Fatalf("usage totals %+v, want %+v", total, sum)
	}
	return nil
}

// shareServices points b at a's database, Redis prefix, secrets and
// recordsd: another gateway of the same deployment (docs/operations.md "Scaling out").
func shareServices(b, a *stack.Stack) {
	for _, name := range []string{"DATABASE_URL", "REDIS_URL", "CIVICGATE_RL_PREFIX", "CIVIC_IDENTITY_SECRET",
		"CIVIC_WEBHOOK_SECRET_KEY", "CIVICGATE_UPSTREAM", "RECORDSD_LISTEN", "RECORDSD_CURSOR_SECRET", "CIVICGATE_USAGE_FLUSH", "CIVICGATE_CACHE", "CIVICGATE_CACHE_PREFIX"} {
		if v := a.Getenv(name); v != "" { // unset stays unset: a Caddyfile default applies
			b.Setenv(name, v)
		}
	}
}

// meter sends requests and keeps, per key id, what `keys usage` must
// report: every answer but a 429 is admitted (and a 4xx or a 5xx when it
// is one), a 429 is refused, and a document's cost is charged when the
// guard forwarded it (200 with data, or the 502 of a backend that is down).
type meter struct {
	t    *testing.T
	gws  []*stack.Stack
	next int
	want map[string]*usageCounts
}

// hit sends one request through the next gateway in turn and checks its
// status is status (or a 429 of policy limitedBy, when not ""); cost is the
// document's cost by docs/design.md D12 (0 when nothing is spent).
func (m *meter) hit(key, id, method, path, body string, status int, limitedBy string, cost int64) {
	m.t.Helper()
	s := m.gws[m.next%len(m.gws)]
	m.next++
	x := send(m.t, s, method, path, key, body)
	c := m.want[id]
	if c == nil {
		c = new(usageCounts)
		m.want[id] = c
	}
	switch {
	case x.status == http.StatusTooManyRequests && limitedBy != "":
		refusal(m.t, x, limitedBy)
		c.Refused++
		return
	case x.status != status:
		m.t.Fatalf("%s %s: %d %s, want %d", method, path, x.status, x.body, status)
	}
	c.Admitted++
	switch {
	case x.status >= 500:
		c.ServerErrors++
	case x.status >= 400:
		c.ClientErrors++
	}
	c.Cost += cost
}

// Documents for the usage tests and their costs (docs/design.md D12).
const (
	usageDoc     = `{"query":"{ bills(input:{limit:2}) { items { id } } }"}` // 1 + 2 × 1
	usageDocCost = 3
	// 1 + 10 × (1 + 25 × 1)
	usageMembersDoc  = `{"query":"{ members(input:{limit:10}) { items { terms { congress } } } }"}`
	usageMembersCost = 261
	notEntitledDoc   = `{"query":"{ lobbyingDisclosures(input:{limit:1}) { nextCursor } }"}`
	invalidDoc       = `{"query":"{ bills { nope } }"}`
	badJSON          = `{"query":`
)

// TestUsageCountedPerKey: two gateways on one database and Redis prefix,
// flushing usage every second (CIVICGATE_USAGE_FLUSH=1s), serve two keys of
// two organizations alternately: 200s, GraphQL errors, guard 403s and 400s,
// 502s while recordsd is stopped, and 429s once the free key's 30/m is
// spent. After the flushes (polled), `civicgate keys usage --org ORG
// --json` reports exactly what the clients saw, per key — admitted,
// refused, 4xx, 5xx — and the cost points the guard charged (D12 costs of
// the documents it forwarded, 502s included: the cost is spent before the
// backend is asked). A third gateway with a one-minute flush interval
// serves a third key and is stopped cleanly: its counts are in the database
// when it has exited. Stopping the first two, whose last flush then runs,
// changes nothing (no count written twice), by minute or by hour.
func TestUsageCountedPerKey(t *testing.T) {
	t.Parallel()
	a := stack.New(t, &bins)
	a.Setenv("CIVICGATE_USAGE_FLUSH", "1s")
	// Answers of a stopped recordsd (502) are counted here: the response cache stays off.
	a.Setenv("CIVICGATE_CACHE", "off")
	a.Prepare()
	rd := a.StartRecordsd()
	gwA := a.StartGateway("caddyfile/Caddyfile.local")
	b := stack.New(t, &bins)
	shareServices(b, a)
	gwB := b.StartGateway("caddyfile/Caddyfile.local")
	free, freeID := a.IssueKey("usagefree", "free", "live")
	paid, paidID := a.IssueKey("usagepaid", "paid_beta", "live")
	m := &meter{t: t, gws: []*stack.Stack{a, b}, want: map[string]*usageCounts{}}
	const graphql = "/v1/graphql"

	for range 6 {
		m.hit(free, freeID, "POST", graphql, usageDoc, 200, "", usageDocCost)
	}
	for range 2 {
		m.hit(free, freeID, "GET", "/bills?limit=1", "", 200, "", 0)
		m.hit(free, freeID, "POST", graphql, notEntitledDoc, 403, "", 0)
		m.hit(free, freeID, "POST", graphql, badJSON, 400, "", 0)
	}
	m.hit(free, freeID, "POST", graphql, invalidDoc, 200, "", 0)
	for range 5 {
		m.hit(paid, paidID, "POST", graphql, usageMembersDoc, 200, "", usageMembersCost)
	}
	m.hit(paid, paidID, "POST", graphql, badJSON, 400, "", 0)
	m.hit(paid, paidID, "GET", "/bills?limit=1", "", 200, "", 0)

	rd.Stop()
	for range 3 {
		m.hit(free, freeID, "POST", graphql, usageDoc, 502, "", usageDocCost)
	}
	m.hit(paid, paidID, "POST", graphql, usageMembersDoc, 502, "", usageMembersCost)
	m.hit(paid, paidID, "GET", "/bills?limit=1", "", 502, "", 0)
	// The free key has spent 16 of its 30 a minute: 20 more end in 429s.
	for range 20 {
		m.hit(free, freeID, "GET", "/bills?limit=1", "", 502, "free", 0)
	}
	if m.want[freeID].Refused == 0 {
		t.Log("no 429: the free key's requests took over a minute")
	}
	t.Logf("sent: free %+v, paid_beta %+v", *m.want[freeID], *m.want[paidID])

	orgs := map[string]map[string]*usageCounts{
		"usagefree": {freeID: m.want[freeID]},
		"usagepaid": {paidID: m.want[paidID]},
	}
	for org, want := range orgs {
		stack.WaitFor(t, 30*time.Second, "usage of "+org+" in the database", func() error {
			got, total := usageOf(t, a, org)
			return sameUsage(t, got, total, want)
		})
	}

	// A gateway stopped cleanly flushes what it holds on the way out: with
	// a one-minute interval, the stop's flush is the one that writes.
	a.StartRecordsd()
	c := stack.New(t, &bins)
	shareServices(c, a)
	c.Setenv("CIVICGATE_USAGE_FLUSH", "1m")
	gwC := c.StartGateway("caddyfile/Caddyfile.local")
	last, lastID := a.IssueKey("usagestop", "enterprise", "live")
	mc := &meter{t: t, gws: []*stack.Stack{c}, want: map[string]*usageCounts{}}
	for range 4 {
		mc.hit(last, lastID, "POST", graphql, usageDoc, 200, "", usageDocCost)
	}
	mc.hit(last, lastID, "POST", graphql, badJSON, 400, "", 0)
	gwC.Stop()
	got, total := usageOf(t, a, "usagestop")
	if err := sameUsage(t, got, total, mc.want); err != nil {
		t.Fatalf("after a clean stop: %v", err)
	}

	// The first two gateways' last flushes add nothing already written.
	gwA.Stop()
	gwB.Stop()
	for org, want := range orgs {
		for _, by := range []string{"minute", "hour"} {
			got, total := usageOf(t, a, org, "--by", by)
			if err := sameUsage(t, got, total, want); err != nil {
				t.Fatalf("after the gateways stopped, by %s: %v", by, err)
			}
		}
	}
}
