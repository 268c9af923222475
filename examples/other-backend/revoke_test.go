package otherbackend

import (
	"context"
	"testing"
	"time"

	"github.com/civicgate/civicgate/examples/other-backend/libraryclient"
)

// TestRevokeClosesSubscriptionSocket: `civicgate keys revoke` closes an open
// subscription socket of that key within 2 s with close code 4403 (keys in
// PostgreSQL, CIVICGATE_KEYS_SOURCE="postgres <dsn>").
func TestRevokeClosesSubscriptionSocket(t *testing.T) {
	g := newGateway(t, keysInPostgres)
	partner, id := g.issue("county-archive", "partner")
	g.start()
	sub, err := libraryclient.SubscribeLoanEvents(g.WSURL, partner)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	g.awaitSubscribed(t, sub, 1)

	g.s.Run(bins.Civicgate, "keys", "revoke", id)
	revoked := time.Now()
	select {
	case err := <-sub.Done:
		if code := sub.CloseCode(err); code != 4403 {
			t.Fatalf("socket ended with %v (close code %d), want 4403", err, code)
		}
		if took := time.Since(revoked); took > 2*time.Second {
			t.Fatalf("closed %s after the revoke, want within 2 s", took)
		}
	case err := <-sub.Errors:
		t.Fatalf("subscription error instead of a close: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("socket still open 5 s after the revoke")
	}
	g.awaitSubscribers(t, 0)
	if r := postJSON(t, g.URL, partner, map[string]string{"query": `{ authors { name } }`}); r.Status != 401 || r.Body != `{"error":"API key revoked"}` {
		t.Fatalf("the revoked key after the close: %d %s", r.Status, r.Body)
	}
}

// The graphql-sse stream of a revoked key ends within 2 s too (docs/design.md
// D22): the stream stops delivering, and the engine no longer holds it.
func TestRevokeEndsEventStream(t *testing.T) {
	g := newGateway(t, keysInPostgres)
	partner, id := g.issue("county-archive", "partner")
	g.start()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := libraryclient.PostSSE(ctx, g.URL, partner, `subscription { loanEvents { kind loan { id } } }`)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if stream.Response.StatusCode != 200 {
		t.Fatalf("event stream: status %d", stream.Response.StatusCode)
	}
	g.awaitSubscribers(t, 1)

	ended := make(chan error, 1)
	go func() {
		for {
			if _, err := stream.Next(); err != nil {
				ended <- err
				return
			}
		}
	}()
	g.s.Run(bins.Civicgate, "keys", "revoke", id)
	revoked := time.Now()
	select {
	case <-ended:
		if took := time.Since(revoked); took > 2*time.Second {
			t.Fatalf("stream ended %s after the revoke, want within 2 s", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("event stream still open 5 s after the revoke")
	}
	g.awaitSubscribers(t, 0)
}
