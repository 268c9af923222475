package notices_test

import (
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/console/notices"
)

// BenchmarkSteadyKeyExpiryRound is the round every gateway runs each minute
// once every due notice is mailed: 500 keys expiring within 7 days, each
// already told, so a round reads them and mails nothing
// (go test -run '^$' -bench SteadyKeyExpiryRound ./modules/console/notices/).
func BenchmarkSteadyKeyExpiryRound(b *testing.B) {
	pool := newPool(b)
	ctx := b.Context()
	for i := range 500 {
		org := fmt.Sprintf("bench-%03d", i)
		if _, err := keystore.IssueWith(ctx, pool, keystore.IssueSpec{Org: org, Tier: "paid", Env: "live",
			Lifecycle: keystore.Lifecycle{ExpiresAt: time.Now().Add(time.Duration(24+i%100) * time.Hour)}}); err != nil {
			b.Fatal(err)
		}
		admin(b, pool, org, fmt.Sprintf("a%03d@example.org", i))
	}
	r := &notices.Runner{Pool: pool, Sources: []notices.Source{notices.KeyExpiry{}}, Now: time.Now, Logger: zap.NewNop()}
	if n, err := r.Once(ctx); err != nil || n != 500 {
		b.Fatalf("first round: %d %v", n, err)
	}
	b.ResetTimer()
	for b.Loop() {
		if n, err := r.Once(ctx); err != nil || n != 0 {
			b.Fatalf("steady round: %d %v", n, err)
		}
	}
}
