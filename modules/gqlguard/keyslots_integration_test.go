package gqlguard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestMaxPerKeyAcrossGateways: two gateways (each its own graphql_guard,
// its own Redis client and store: the URLs differ in client_name) share
// max_per_key 2 through Redis. Two subscriptions through A fill the key's
// slots, so B refuses a third with SUBSCRIPTION_LIMIT although B holds none
// itself; completing one on A frees a slot for B.
func TestMaxPerKeyAcrossGateways(t *testing.T) {
	client, prefix := testenv.Redis(t)
	up := &wsUpstream{}
	upstream := httptest.NewServer(http.HandlerFunc(up.serve))
	t.Cleanup(upstream.Close)
	portA, portB := testenv.FreePort(t), testenv.FreePort(t)
	site := func(port int, name string) string {
		return fmt.Sprintf(`http://localhost:%d {
	route /ws {
		test_caller
		graphql_guard {
			schema %s
			subscriptions {
				max_per_key 2
				redis redis://%s/0?client_name=%s
				key_prefix %s
			}
		}
		reverse_proxy %s
	}
}
`, port, testdataPath(t, "library.graphqls"), testenv.RedisAddr(), name, prefix, upstream.Listener.Addr().String())
	}
	config := fmt.Sprintf(`{
	skip_install_trust
	admin localhost:%d
	http_port %d
	https_port %d
	grace_period 1ns
	auto_https off
}
%s%s`, adminPort, portA, testenv.FreePort(t), site(portA, "gwA"), site(portB, "gwB"))
	tester := caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort, TestRequestTimeout: 20 * time.Second})
	tester.InitServer(config, "caddyfile")
	if t.Failed() {
		t.FailNow()
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	header := http.Header{"X-Test-Key": {"key_shared"}}
	open := func(port int) *wsTestClient {
		c := dialWS(t, ctx, fmt.Sprintf("http://localhost:%d", port), header)
		if ack := c.exchange(wsMessage{Type: "connection_init"}); ack.Type != "connection_ack" {
			t.Fatalf("connection_init: %+v", ack)
		}
		return c
	}
	subscribe := func(c *wsTestClient, id string) wsMessage {
		t.Helper()
		reply := c.exchange(wsMessage{Type: "subscribe", ID: id, Payload: json.RawMessage(`{"query":` + jsonString(loanEventsSub) + `}`)})
		if reply.ID != id {
			t.Fatalf("subscribe %s answered for %q: %+v", id, reply.ID, reply)
		}
		return reply
	}
	a, b := open(portA), open(portB)
	for _, id := range []string{"a1", "a2"} {
		if reply := subscribe(a, id); reply.Type != "next" {
			t.Fatalf("subscribe %s through A: %s %s", id, reply.Type, reply.Payload)
		}
	}
	if reply := subscribe(b, "b1"); reply.Type != "error" || !strings.Contains(string(reply.Payload), codeSubscriptionLimit) {
		t.Fatalf("a third subscription through B: %s %s, want an error %s", reply.Type, reply.Payload, codeSubscriptionLimit)
	}
	set := prefix + "subs:{key_shared}"
	if n, err := client.ZCard(ctx, set).Result(); err != nil || n != 2 {
		t.Fatalf("%s holds %d leases (%v), want 2", set, n, err)
	}

	done, _ := json.Marshal(wsMessage{Type: "complete", ID: "a1"})
	a.write(done)
	try := 0
	testenv.Eventually(t, 10*time.Second, "B to get the slot A gave back", func() error {
		try++
		if reply := subscribe(b, fmt.Sprintf("b-retry-%d", try)); reply.Type != "next" {
			return fmt.Errorf("%s %s", reply.Type, reply.Payload)
		}
		return nil
	})
	if reply := subscribe(a, "a3"); reply.Type != "error" || !strings.Contains(string(reply.Payload), codeSubscriptionLimit) {
		t.Fatalf("a third subscription through A once B holds one: %s %s", reply.Type, reply.Payload)
	}
	members, err := client.ZRange(ctx, set, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	instances := map[string]bool{}
	for _, m := range members {
		instance, _, _ := strings.Cut(m, ":")
		instances[instance] = true
	}
	if len(members) != 2 || len(instances) != 2 {
		t.Fatalf("leases %v, want one from each gateway's store", members)
	}
}
