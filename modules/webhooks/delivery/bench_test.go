package delivery_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/webhooks/delivery"
	"github.com/civicgate/civicgate/modules/webhooks/internal/feedtest"
	"github.com/civicgate/civicgate/modules/webhooks/secretbox"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

func benchStore(b *testing.B) (*feedtest.DB, *store.Store) {
	db := feedtest.New(b)
	box, err := secretbox.New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		b.Fatal(err)
	}
	return db, store.New(db.Pool, box)
}

// BenchmarkFanOut: events per second turned into deliveries for 10
// endpoints (one op = one event).
func BenchmarkFanOut(b *testing.B) {
	db, s := benchStore(b)
	ctx := context.Background()
	org := db.NewOrg(b, "bench", "paid")
	for range 10 {
		if _, _, err := s.CreateEndpoint(ctx, time.Now(), store.EndpointSpec{Org: org.ID, URL: "https://example.org/h", Families: feedtest.EventFamilies()}, 0); err != nil {
			b.Fatal(err)
		}
	}
	db.Insert(b, "bills", b.N)
	b.ResetTimer()
	for done := 0; done < b.N; {
		n, err := s.FanOut(ctx, time.Now(), 500, feedtest.Tiers())
		if err != nil {
			b.Fatal(err)
		}
		done += n
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkDeliver: signed deliveries per second from one instance (16
// workers, max 16 in flight, 15 per organization: one organization here) to a local receiver (one op = one delivery,
// claim to recorded outcome).
func BenchmarkDeliver(b *testing.B) {
	db, s := benchStore(b)
	ctx := context.Background()
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	org := db.NewOrg(b, "bench", "paid")
	if _, _, err := s.CreateEndpoint(ctx, time.Now(), store.EndpointSpec{Org: org.ID, URL: rcv.URL, Families: feedtest.EventFamilies()}, 0); err != nil {
		b.Fatal(err)
	}
	db.Insert(b, "bills", b.N)
	d, err := delivery.New(delivery.Config{Store: s, Client: dev.Client(5 * time.Second), Workers: 16, MaxInFlight: 16,
		MaxInFlightPerOrg: 15, Tiers: feedtest.Tiers()})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := d.FanOut(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for done := 0; done < b.N; {
		n, err := d.RunOnce(ctx)
		if err != nil {
			b.Fatal(err)
		}
		done += n
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
}
