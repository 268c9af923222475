package mcp

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestListenTierChangeWithoutRequest: a tier change written to the keys
// file reaches an open subscriptions/listen stream through civic_auth's
// credential watch (contract.EntitlementWatch, docs/design.md D80) with no
// further request of the key; a stream that did not ask for
// toolsListChanged gets none, and a request of the key in between (the
// same-instance path, listenTable.seen) leaves the watch following the next
// change.
func TestListenTierChangeWithoutRequest(t *testing.T) {
	g := newGateway(t)
	key := g.issue(t, "reader")
	g.start(t, gatewayConfig{mcpOptions: "max_sessions_per_key 4"})
	open := func(params string) *bufio.Scanner {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, g.base+"/v1/mcp", strings.NewReader(modernBody(`"L"`, methodListen, params)))
		req.Header.Set("Authorization", "Bearer "+key.Key)
		for k, v := range modernHeaders(methodListen, "") {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("listen: %d", resp.StatusCode)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "notifications/subscriptions/acknowledged") {
				return sc
			}
		}
		t.Fatalf("listen stream ended before its acknowledgement: %v", sc.Err())
		return nil
	}
	// events forwards each data line of sc.
	events := func(sc *bufio.Scanner) <-chan string {
		ch := make(chan string, 4)
		go func() {
			defer close(ch)
			for sc.Scan() {
				if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
					ch <- d
				}
			}
		}()
		return ch
	}
	asked := events(open(`"notifications":{"toolsListChanged":true}`))
	silent := events(open(`"notifications":{}`))
	start := time.Now()
	g.setTier(t, key.ID, "partner")
	select {
	case d := <-asked:
		if d != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}` {
			t.Fatalf("after the tier change: %s", d)
		}
		t.Logf("list_changed %s after the keys file was written", time.Since(start).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("no list_changed 30 s after the tier change, with no request of the key")
	}
	// A request of the key with the new tier (listenTable.seen), then a
	// second change: the stream still follows the watch.
	r := g.send(t, http.MethodPost, "/v1/mcp", key.Key, []byte(modernBody("2", "tools/call", `"name":"member_loans","arguments":{"member":"m1"}`)), modernHeaders("tools/call", "member_loans"))
	if r.status != http.StatusOK {
		t.Fatalf("a call of the new tier's tool: %d %s", r.status, r.body)
	}
	g.setTier(t, key.ID, "reader") // a second change: the streams still follow the watch
	select {
	case d := <-asked:
		if !strings.Contains(d, "notifications/tools/list_changed") {
			t.Fatalf("after the second tier change: %s", d)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no list_changed 30 s after the second tier change")
	}
	select {
	case d := <-silent:
		t.Fatalf("a stream that did not ask for toolsListChanged got %s", d)
	default:
	}
}
