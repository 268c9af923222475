package notices_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/testkit/testmailpit"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/console/notices"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// flushCrossings reports cs to two gateways' meters and writes each meter's
// crossings by a usage flush, as two gateways that saw the same decisions do.
func flushCrossings(t *testing.T, pool *pgxpool.Pool, cs ...usage.Crossing) {
	t.Helper()
	for range 2 {
		m := usage.NewCrossingMeter(0)
		for _, c := range cs {
			m.Add(c)
		}
		if _, err := usage.WriteFlush(t.Context(), pool, usage.NewBatchID(), usage.Batch{Crossings: m.Drain()}); err != nil {
			t.Fatal(err)
		}
	}
}

// bothRounds runs one round of each runner at once (two gateways) and
// returns the mails they enqueued together.
func bothRounds(t *testing.T, runners ...*notices.Runner) int {
	t.Helper()
	var (
		mu    sync.Mutex
		total int
		wg    sync.WaitGroup
	)
	for _, r := range runners {
		wg.Go(func() {
			n, err := r.Once(t.Context())
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	wg.Wait()
	return total
}

// TestQuotaNoticeOncePerWindow: a crossing written by two gateways' flushes
// mails each admin once, through two notice rounds running at once; the
// next window's crossing mails again; 80 % and 100 % read together make one
// mail of all; a cost budget crossed under a grant says so; every crossing
// is marked mailed, and the mails name the figures and no key.
func TestQuotaNoticeOncePerWindow(t *testing.T) {
	pool := newPool(t)
	mp := testmailpit.Start(t)
	ctx := t.Context()
	a, err := keystore.Issue(ctx, pool, "quota-a", "free", "live")
	if err != nil {
		t.Fatal(err)
	}
	b, err := keystore.Issue(ctx, pool, "quota-b", "paid", "live")
	if err != nil {
		t.Fatal(err)
	}
	admin(t, pool, "quota-a", "ada@example.org")
	admin(t, pool, "quota-a", "bob@example.org")
	admin(t, pool, "quota-b", "eve@example.org")
	until := time.Now().Add(72 * time.Hour).Truncate(time.Second).UTC()
	if _, err := keystore.SetGrant(ctx, pool, "quota-b", keystore.Grant{Cost: 5000, Until: until}); err != nil {
		t.Fatal(err)
	}

	c := &clock{t: time.Now().Add(time.Second)}
	runner := func() *notices.Runner {
		return &notices.Runner{Pool: pool, Sources: []notices.Source{notices.Quota{SiteURL: "https://console.example.org"}},
			Now: c.now, Logger: zap.NewNop()}
	}
	r1, r2 := runner(), runner()
	w1 := usage.WindowStart(c.t, time.Minute)
	crossing := func(org, key string, level int, window time.Time) usage.Crossing {
		return usage.Crossing{OrgID: org, KeyID: key, Policy: "free", Kind: usage.KindRequests, Level: level,
			WindowStart: window, Window: time.Minute, Limit: 100, CrossedAt: c.t}
	}

	flushCrossings(t, pool, crossing(a.OrgID, "", usage.Level80, w1))
	if n := bothRounds(t, r1, r2); n != 2 {
		t.Fatalf("80 %% of window 1: %d mails, want one per admin of quota-a", n)
	}
	if n := bothRounds(t, r1, r2); n != 0 {
		t.Fatalf("window 1 again: %d mails", n)
	}
	flushCrossings(t, pool, crossing(a.OrgID, "", usage.Level80, w1)) // a late gateway's flush: ON CONFLICT
	if n := bothRounds(t, r1, r2); n != 0 {
		t.Fatalf("window 1 flushed again: %d mails", n)
	}

	// The next window: 80 % mails again; then 80 % and 100 % of a third,
	// counted per key, read in one round, make one mail.
	c.t = c.t.Add(time.Minute)
	w2 := usage.WindowStart(c.t, time.Minute)
	flushCrossings(t, pool, crossing(a.OrgID, "", usage.Level80, w2))
	if n := bothRounds(t, r1, r2); n != 2 {
		t.Fatalf("80 %% of window 2: %d mails, want 2", n)
	}
	c.t = c.t.Add(time.Minute)
	w3 := usage.WindowStart(c.t, time.Minute)
	flushCrossings(t, pool, crossing(a.OrgID, a.ID, usage.Level80, w3), crossing(a.OrgID, a.ID, usage.Level100, w3))
	cost := usage.Crossing{OrgID: b.OrgID, Policy: "paid-cost", Kind: usage.KindCost, Level: usage.Level80,
		WindowStart: usage.WindowStart(c.t, time.Hour), Window: time.Hour, Limit: 5000, CrossedAt: c.t}
	flushCrossings(t, pool, cost)
	if n := bothRounds(t, r1, r2); n != 3 {
		t.Fatalf("100 %% of window 3 and quota-b's cost: %d mails, want 2 + 1", n)
	}
	if left, err := usage.UnmailedCrossings(ctx, pool, 10); err != nil || len(left) != 0 {
		t.Fatalf("unmailed crossings left: %v, %v", left, err)
	}

	deliver(t, pool, mp)
	mails := mp.Mails(t)
	subjects := map[string]int{}
	for _, m := range mails {
		subjects[m.To[0].Address+": "+m.Subject]++
		for part, body := range map[string]string{"text": m.Text, "HTML": m.HTML} {
			if strings.Contains(body, a.Key) || strings.Contains(body, b.Key) {
				t.Errorf("%s part holds a key", part)
			}
			if !strings.Contains(body, "https://console.example.org/orgs/") {
				t.Errorf("%s part has no link to the console:\n%s", part, body)
			}
		}
		switch {
		case strings.Contains(m.Subject, "cost budget"):
			for _, want := range []string{"80 % of its cost budget of 5000 cost points per hour", "policy paid-cost",
				"your organization's grant, in force until " + until.Format("2 January 2006 15:04 UTC")} {
				if !strings.Contains(m.Text, want) {
					t.Errorf("cost mail lacks %q:\n%s", want, m.Text)
				}
			}
		case strings.Contains(m.Subject, "used all"):
			for _, want := range []string{"used all of its request quota of 100 requests per minute (policy free)",
				"the key " + a.ID, "your tier's", "refused with 429"} {
				if !strings.Contains(m.Text, want) {
					t.Errorf("100 %% mail lacks %q:\n%s", want, m.Text)
				}
			}
		default:
			for _, want := range []string{"used 80 % of its request quota of 100 requests per minute (policy free), in the window from " +
				"", "These figures are your tier's."} {
				if !strings.Contains(m.Text, want) {
					t.Errorf("80 %% mail lacks %q:\n%s", want, m.Text)
				}
			}
		}
	}
	want := map[string]int{
		"ada@example.org: Your organization quota-a used 80 % of its request quota this window": 2,
		"bob@example.org: Your organization quota-a used 80 % of its request quota this window": 2,
		"ada@example.org: Your organization quota-a used all of its request quota this window":  1,
		"bob@example.org: Your organization quota-a used all of its request quota this window":  1,
		"eve@example.org: Your organization quota-b used 80 % of its cost budget this window":   1,
	}
	if len(mails) != 7 || len(subjects) != len(want) {
		t.Fatalf("%d mails: %v, want %v", len(mails), subjects, want)
	}
	for k, n := range want {
		if subjects[k] != n {
			t.Errorf("%q: %d mails, want %d", k, subjects[k], n)
		}
	}
}

// TestQuotaNoticeStale: a crossing of an organization without an admin
// waits for one, and is dropped (marked, nothing mailed) a day after its
// window ended, so such rows cannot hold the read at its bound.
func TestQuotaNoticeStale(t *testing.T) {
	pool := newPool(t)
	ctx := t.Context()
	k, err := keystore.Issue(ctx, pool, "quota-lonely", "free", "live")
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Now()}
	flushCrossings(t, pool, usage.Crossing{OrgID: k.OrgID, Policy: "free", Kind: usage.KindRequests, Level: usage.Level80,
		WindowStart: usage.WindowStart(c.t, time.Minute), Window: time.Minute, Limit: 100, CrossedAt: c.t})
	r := &notices.Runner{Pool: pool, Sources: []notices.Source{notices.Quota{}}, Now: c.now, Logger: zap.NewNop()}
	if n, err := r.Once(ctx); err != nil || n != 0 {
		t.Fatalf("no admin: %d mails, %v", n, err)
	}
	if left, err := usage.UnmailedCrossings(ctx, pool, 10); err != nil || len(left) != 1 {
		t.Fatalf("without an admin the crossing waits: %v, %v", left, err)
	}
	c.t = c.t.Add(notices.StaleCrossing + 2*time.Minute)
	if n, err := r.Once(ctx); err != nil || n != 0 {
		t.Fatalf("stale: %d mails, %v", n, err)
	}
	if left, err := usage.UnmailedCrossings(ctx, pool, 10); err != nil || len(left) != 0 {
		t.Fatalf("a stale crossing is not dropped: %v, %v", left, err)
	}
}
