package wsproxy

import (
	"fmt"
	"runtime"
	"testing"
)

// TestTenThousandSubscribesOnOneSocket: with MaxSubscriptions = 100, 100
// subscriptions run and the other 9 900 are answered SUBSCRIPTION_LIMIT;
// the socket stays open and the heap does not grow with the refusals.
func TestTenThousandSubscribesOnOneSocket(t *testing.T) {
	const total, limit = 10000, 100
	p := startProxy(t, startUpstream(t), defaultConfig(Config{MaxSubscriptions: limit}))
	c := dial(t, p.addr)
	c.init()

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	sendErr := make(chan error, 1)
	go func() {
		var batch []byte
		for i := range total {
			batch = append(batch, text(subscribeMsg(fmt.Sprint(i), 0))...)
			if len(batch) > 32<<10 || i == total-1 {
				if _, err := c.conn.Write(batch); err != nil {
					sendErr <- err
					return
				}
				batch = batch[:0]
			}
		}
		sendErr <- nil
	}()
	refused := 0
	for refused < total-limit {
		m := c.next()
		if m.Type != "error" || errorCode(t, m) != "SUBSCRIPTION_LIMIT" {
			t.Fatalf("got %+v", m)
		}
		refused++
	}
	if err := <-sendErr; err != nil {
		t.Fatal(err)
	}
	// Still open: a ping is answered by the upstream.
	c.sendText(`{"type":"ping"}`)
	if m := c.next(); m.Type != "pong" {
		t.Fatalf("got %s, want pong", m.Type)
	}

	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	// 100 live gqlgen subscriptions and their goroutines on both sides fit
	// in a few MiB; 9 900 refusals must not add to it.
	if grown := int64(after.HeapInuse) - int64(before.HeapInuse); grown > 16<<20 {
		t.Fatalf("heap grew %d bytes", grown)
	}
}
