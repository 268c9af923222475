package reliability

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/testkit/testmailpit"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/console/notices"
	"github.com/civicgate/civicgate/modules/console/outbox"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// The quota mails (docs/design.md D82) against hostile crossing rows and
// volume, on real PostgreSQL and Mailpit: a policy name (it may come from a
// request header, D81) holding markup, CR LF and a Bcc header, NUL, bytes
// that are not UTF-8, or 64 KiB is text of a bounded mail that reaches the
// admin only; a flood of crossings fills the outbox to its bound and no
// further, and every crossing is mailed once as the outbox drains.

// TestQuotaMailHostilePolicy: each hostile policy, written through the
// usage flush, makes one mail whose HTML part holds it escaped, whose
// headers it never enters, and whose size is bounded.
func TestQuotaMailHostilePolicy(t *testing.T) {
	pool := mailPool(t)
	mp := testmailpit.Start(t)
	k, err := keystore.Issue(t.Context(), pool, "quota-hostile", "free", "live")
	if err != nil {
		t.Fatal(err)
	}
	mailAdmin(t, pool, k.OrgID, "ada@example.org")
	policies := []string{`<script>alert(1)</script>`, "free\r\nBcc: eve@evil.example\r\n\r\nbody", "free\x00nul",
		"free\xff\xfe", strings.Repeat("p", 64<<10)}
	now := time.Now()
	m := usage.NewCrossingMeter(0)
	for _, p := range policies {
		m.Add(usage.Crossing{OrgID: k.OrgID, KeyID: k.ID, Policy: p, Kind: usage.KindRequests, Level: usage.Level80,
			WindowStart: usage.WindowStart(now, time.Minute), Window: time.Minute, Limit: 30, CrossedAt: now})
	}
	if _, err := usage.WriteFlush(t.Context(), pool, usage.NewBatchID(), usage.Batch{Crossings: m.Drain()}); err != nil {
		t.Fatal(err)
	}
	r := &notices.Runner{Pool: pool, Sources: []notices.Source{notices.Quota{}}, Now: time.Now, Logger: zap.NewNop()}
	if n, err := r.Once(t.Context()); err != nil || n != len(policies) {
		t.Fatalf("%d mails, %v; want one per policy", n, err)
	}
	drainOutbox(t, pool, mp)
	mails := mp.Mails(t)
	if len(mails) != len(policies) {
		t.Fatalf("%d mails, want %d", len(mails), len(policies))
	}
	for _, ml := range mails {
		if len(ml.To) != 1 || ml.To[0].Address != "ada@example.org" || len(ml.Headers["Bcc"]) != 0 || len(ml.Headers["Cc"]) != 0 {
			t.Errorf("recipients %v, headers %v", ml.To, ml.Headers)
		}
		if ml.Subject != "Your organization quota-hostile used 80 % of its request quota this window" {
			t.Errorf("subject %q", ml.Subject)
		}
		if strings.Contains(ml.HTML, "<script") {
			t.Error("the HTML part holds markup of the policy")
		}
		for _, bad := range []string{"\x00", k.Key} {
			if strings.Contains(ml.HTML, bad) || strings.Contains(ml.Text, bad) {
				t.Errorf("a part holds %q", bad)
			}
		}
		if len(ml.Text) > 4<<10 || len(ml.HTML) > 4<<10 {
			t.Errorf("a mail of %d + %d bytes: the policy is not bounded", len(ml.Text), len(ml.HTML))
		}
	}
	if got := mp.MailsTo(t, "eve@evil.example"); len(got) != 0 {
		t.Errorf("the Bcc in a policy reached %d mails", len(got))
	}
	if !strings.Contains(strings.Join(htmlParts(mails), ""), "&lt;script&gt;") {
		t.Error("the markup policy is not shown escaped")
	}
}

func htmlParts(ms []testmailpit.Mail) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.HTML
	}
	return out
}

// TestQuotaCrossingFlood: 120 crossings of one organization (120 minutes'
// windows) against an outbox bounded at 25: each round enqueues up to the
// bound, the crossings it could not mail stay unmarked (the mark rolls back
// with the notice), and as the outbox drains every crossing is mailed once.
func TestQuotaCrossingFlood(t *testing.T) {
	pool := mailPool(t)
	mp := testmailpit.Start(t)
	const crossings, bound = 120, 25
	k, err := keystore.Issue(t.Context(), pool, "quota-flood", "free", "live")
	if err != nil {
		t.Fatal(err)
	}
	mailAdmin(t, pool, k.OrgID, "ada@example.org")
	now := time.Now()
	m := usage.NewCrossingMeter(0)
	for i := range crossings {
		at := now.Add(-time.Duration(i) * time.Minute)
		m.Add(usage.Crossing{OrgID: k.OrgID, Policy: "free", Kind: usage.KindRequests, Level: usage.Level80,
			WindowStart: usage.WindowStart(at, time.Minute), Window: time.Minute, Limit: 30, CrossedAt: at})
	}
	if _, err := usage.WriteFlush(t.Context(), pool, usage.NewBatchID(), usage.Batch{Crossings: m.Drain()}); err != nil {
		t.Fatal(err)
	}
	r := &notices.Runner{Pool: pool, Sources: []notices.Source{notices.Quota{}}, MaxPending: bound, Now: time.Now, Logger: zap.NewNop()}
	total := 0
	for round := 0; total < crossings; round++ {
		if round > crossings/bound+2 {
			t.Fatalf("%d mails after %d rounds", total, round)
		}
		n, err := r.Once(t.Context())
		if n < crossings-total && !strings.Contains(fmt.Sprint(err), outbox.ErrFull.Error()) {
			t.Fatalf("round %d: %d mails, %v; want the outbox full", round, n, err)
		}
		st, err := outbox.Count(t.Context(), pool)
		if err != nil || st.Waiting > bound {
			t.Fatalf("round %d: outbox %+v %v: the bound did not hold", round, st, err)
		}
		total += n
		left, err := usage.UnmailedCrossings(t.Context(), pool, crossings)
		if err != nil || len(left) != crossings-total {
			t.Fatalf("round %d: %d crossings unmarked, %d mailed of %d: %v", round, len(left), total, crossings, err)
		}
		drainOutbox(t, pool, mp)
	}
	if got := len(mp.Mails(t)); got != crossings {
		t.Fatalf("%d mails, want %d", got, crossings)
	}
}
