package delivery_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/webhooks/delivery"
	"github.com/civicgate/civicgate/modules/webhooks/secretbox"
	"github.com/civicgate/civicgate/modules/webhooks/signature"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// setAsideCounter counts SetAside by kind.
type setAsideCounter struct {
	mu    sync.Mutex
	kinds map[string]int
}

func (c *setAsideCounter) Delivery(string)               {}
func (c *setAsideCounter) Attempt(string, time.Duration) {}
func (c *setAsideCounter) Lag(int64, time.Duration)      {}
func (c *setAsideCounter) SetAside(kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.kinds[kind]++
}

func (c *setAsideCounter) get(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kinds[kind]
}

// TestPoisonedEndpointSetAsideWhileOthersAreDelivered: one endpoint whose
// secret another key sealed (a second checkout sharing the database), among
// healthy endpoints of two organizations, in a real PostgreSQL, with the
// real worker loop and real receivers. The healthy receivers get every
// event; the poisoned endpoint's deliveries end failed with the documented
// reason, it is unusable, the metric counts it once, an error line names its
// id and carries no secret. Before, every claim failed and nothing was
// delivered to anyone.
func TestPoisonedEndpointSetAsideWhileOthersAreDelivered(t *testing.T) {
	e := newEnv(t)
	other := e.db.NewOrg(t, "other", "paid")
	rcA, rcB, rcPoisoned := newReceiver(t), newReceiver(t), newReceiver(t)
	healthyA, _ := e.endpoint(rcA.URL(), "bills")
	poisoned, secret := e.endpoint(rcPoisoned.URL(), "bills")
	healthyB, _ := e.endpointOf(other, rcB.URL(), "bills")
	foreign, err := secretbox.New([]byte("the key of another checkout, 32 bytes+"))
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := foreign.Seal([]byte(secret), []byte(poisoned.ID))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Pool.Exec(e.ctx, `UPDATE civicgate.webhook_endpoints SET secret_sealed = $2 WHERE id = $1`, poisoned.ID, sealed); err != nil {
		t.Fatal(err)
	}
	const events = 5
	e.db.Insert(t, "bills", events)

	// The sidecar is a process that starts now, with this database's key.
	box, err := secretbox.New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	metrics := &setAsideCounter{kinds: map[string]int{}}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	e.start(delivery.Config{Store: store.New(e.db.Pool, box), Client: dev.Client(5 * time.Second), Workers: 4, MaxInFlightPerOrg: 2,
		Poll: 10 * time.Millisecond, Logger: zap.New(core), Metrics: metrics,
		CheckURL: func(u string) error { _, err := dev.CheckURL(u); return err }}, stop, &wg)
	defer func() { close(stop); wg.Wait() }()

	testenv.EventuallyTrue(t, 30*time.Second, "the healthy endpoints' deliveries and the poisoned one's failures", func() bool {
		return e.statusCount(healthyA.ID)["delivered:"] == events && e.statusCount(healthyB.ID)["delivered:"] == events &&
			e.statusCount(poisoned.ID)["failed:"+store.ReasonSecret] == events
	})
	if n := len(rcPoisoned.requests()); n != 0 {
		t.Fatalf("the poisoned endpoint was sent %d requests", n)
	}
	for _, r := range e.deliveryRows(poisoned.ID) {
		if r.Status != "failed" || r.LastError != store.ReasonSecret || r.Attempts != 0 {
			t.Fatalf("poisoned delivery %+v", r)
		}
	}
	for _, rc := range []*receiver{rcA, rcB} {
		if got := rc.succeeded(); len(got) != events {
			t.Fatalf("a healthy receiver got %d events", len(got))
		}
	}
	got, err := e.store.GetEndpoint(e.ctx, e.org.ID, poisoned.ID)
	if err != nil || got.Status != store.StatusUnusable || got.UnusableReason != store.ReasonSecret {
		t.Fatalf("endpoint %+v %v", got, err)
	}
	if n := metrics.get(store.KindSecret); n != 1 {
		t.Fatalf("set-aside metric %d, want 1", n)
	}
	lines := logs.FilterMessageSnippet("set aside").FilterField(zap.String("endpoint_id", poisoned.ID)).All()
	if len(lines) != 1 || lines[0].Level != zapcore.ErrorLevel {
		t.Fatalf("set-aside log lines: %+v", lines)
	}
	key, _ := signature.Key(secret)
	for _, l := range logs.All() {
		text := l.Message + " " + strings.Join(fieldStrings(l), " ")
		if strings.Contains(text, secret) || strings.Contains(text, strings.TrimPrefix(secret, "whsec_")) || bytes.Contains([]byte(text), key) {
			t.Fatalf("a log line carries the secret: %s", text)
		}
	}
}

func fieldStrings(l observer.LoggedEntry) []string {
	var out []string
	for k, v := range l.ContextMap() {
		out = append(out, k, fmt.Sprint(v))
	}
	return out
}
