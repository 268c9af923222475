package gqlcache

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// failoverTimeout bounds each Redis call of the failover tests' nodes: a
// dead master costs a request that much, never an error.
const failoverTimeout = 250 * time.Millisecond

// testSharedSentinelFailover: two gateways serve without pause while the
// Sentinel master is killed and its replica promoted. No request fails;
// the tier serves shared hits again through the new master; and after a
// change, no entry from before it is served by either gateway.
func testSharedSentinelFailover(t *testing.T) {
	t.Parallel()
	s := testenv.StartRedisSentinel(t)
	a, b, conn, data := failoverNodes(t, s.URL())
	docs := []string{"doc0", "doc1", "doc2", "doc3", "doc4", "doc5", "doc6", "doc7"}
	for _, doc := range docs[:4] {
		wantStatus(t, "A's miss of "+doc, first(a.serve(t, doc, "bills")), storedStatus)
	}
	stop := serveUnderLoad(a, b, docs)
	old := s.MasterAddr(t)
	if now := s.Failover(t); now == old {
		t.Fatalf("the master is still %s", old)
	}
	awaitSharedHit(t, a, b, func(i int) string { return fmt.Sprintf("after%d", i) })
	stop(t)
	noStaleAfterChange(t, conn, data, docs, a, b)
}

// testSharedClusterFailover is the same on a 3-master Cluster whose master
// holding some of the entries is killed: its replica takes over the slots
// (MOVED, a new slot map), and the entries in them are served again.
func testSharedClusterFailover(t *testing.T) {
	t.Parallel()
	c := testenv.StartRedisCluster(t, 3, 1)
	a, b, conn, data := failoverNodes(t, c.URL())
	var docs []string // in the first master's slots
	for i := 0; len(docs) < 4; i++ {
		if doc := fmt.Sprintf("doc%d", i); c.RangeOf(t, a.sharedKey(t, doc, "bills")) == 0 {
			docs = append(docs, doc)
		}
	}
	for _, doc := range docs {
		wantStatus(t, "A's miss of "+doc, first(a.serve(t, doc, "bills")), storedStatus)
	}
	stop := serveUnderLoad(a, b, docs)
	c.KillMaster(t, 0)
	c.WaitHealthy(t)
	awaitSharedHit(t, a, b, func(i int) string {
		for j := i * 1000; ; j++ { // a document in the killed master's slots
			if doc := fmt.Sprintf("after%d", j); c.RangeOf(t, a.sharedKey(t, doc, "bills")) == 0 {
				return doc
			}
		}
	})
	stop(t)
	noStaleAfterChange(t, conn, data, docs, a, b)
}

// failoverNodes are two nodes on redisURL with short Redis timeouts, their
// data at version 1.
func failoverNodes(t *testing.T, redisURL string) (a, b *node, conn *pgx.Conn, data *atomic.Int64) {
	t.Helper()
	dsn, conn := changeFeed(t)
	data = new(atomic.Int64)
	data.Store(1)
	a = newNodeTimeout(t, "A", dsn, DefaultChannel, redisURL, "cache:", data, failoverTimeout)
	b = newNodeTimeout(t, "B", dsn, DefaultChannel, redisURL, "cache:", data, failoverTimeout)
	return a, b, conn, data
}

// serveUnderLoad serves docs through a and b in turn, their memory emptied
// now and then so that Redis is asked all along, until the returned stop is
// called; stop fails the test if any answer failed, was not a 200 or not
// version 1, or if no Redis error was met (the outage was not under load).
func serveUnderLoad(a, b *node, docs []string) (stop func(t *testing.T)) {
	quit, done := make(chan struct{}), make(chan error)
	var served atomic.Int64
	go func() {
		var err error
		for i := 0; ; i++ {
			select {
			case <-quit:
				done <- err
				return
			default:
			}
			if err != nil {
				continue
			}
			n := []*node{a, b}[i%2]
			if i%5 == 0 {
				n.in.store.flush()
			}
			doc := docs[i%len(docs)]
			w, _, serr := n.serveOnce(doc, "bills")
			switch {
			case serr != nil:
				err = fmt.Errorf("%s, %s: handler error %w", n.name, doc, serr)
			case w.Code != 200 || !strings.Contains(w.Body.String(), `"version":1`):
				err = fmt.Errorf("%s, %s: %d %s", n.name, doc, w.Code, w.Body)
			}
			served.Add(1)
		}
	}()
	return func(t *testing.T) {
		t.Helper()
		close(quit)
		if err := <-done; err != nil {
			t.Fatalf("while failing over: %v", err)
		}
		errs := a.sharedCount(t, sharedError) + b.sharedCount(t, sharedError)
		if errs == 0 {
			t.Fatal("no Redis error while the master was down: was the failover under load?")
		}
		t.Logf("%d requests answered during the failover, %v Redis errors (misses)", served.Load(), errs)
	}
}

// awaitSharedHit waits (20 s at most) until an entry A stores is a shared
// hit for B: the tier works again through the new master.
func awaitSharedHit(t *testing.T, a, b *node, doc func(i int) string) {
	t.Helper()
	i := 0
	testenv.Eventually(t, 20*time.Second, "a shared hit through the new master", func() error {
		d := doc(i)
		i++
		a.serve(t, d, "bills")
		if w, _ := b.serve(t, d, "bills"); w.Header().Get("Cache-Status") != sharedHitStatus {
			return fmt.Errorf("B answers Cache-Status %q", w.Header().Get("Cache-Status"))
		}
		return nil
	})
}

// noStaleAfterChange commits a bills change (version 2) and checks that
// both nodes answer every doc at version 2 once they processed it.
func noStaleAfterChange(t *testing.T, conn *pgx.Conn, data *atomic.Int64, docs []string, nodes ...*node) {
	t.Helper()
	data.Store(2)
	change(t, conn, "bills")
	for _, n := range nodes {
		awaitCursor(t, n, 1)
	}
	for _, n := range nodes {
		for _, doc := range docs {
			if w, _ := n.serve(t, doc, "bills"); !strings.Contains(w.Body.String(), `"version":2`) {
				t.Fatalf("%s after the change, %s: %q %s", n.name, doc, w.Header().Get("Cache-Status"), w.Body)
			}
		}
	}
}

func first[T, U any](x T, _ U) T { return x }
