package e2e

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/stack"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestUpstreamFaults: the gateway answers 502 and 504 as JSON when recordsd
// refuses connections or hangs (docs/api.md "Errors").
func TestUpstreamFaults(t *testing.T) {
	s := stack.New(t, &bins)
	s.Run(bins.Civicgate, "keys", "migrate")
	key, _ := s.IssueKey("acme", "enterprise", "live")

	// A listener that accepts connections and never answers.
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := hung.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	s.Setenv("CIVICGATE_UPSTREAM", hung.Addr().String())
	s.Setenv("CIVICGATE_UPSTREAM_TIMEOUT", "1s")
	s.StartGateway("caddyfile/Caddyfile.local")
	resp, body := do(t, s, "GET", "/bills", key, "", nil)
	if resp.StatusCode != 504 || body != `{"error":"Gateway Timeout"}` {
		t.Fatalf("hung upstream: %d %s", resp.StatusCode, body)
	}

	// Point the running gateway at a closed port through a reload.
	closed := testenv.FreePort(t)
	s.Setenv("CIVICGATE_UPSTREAM", "127.0.0.1:"+strconv.Itoa(closed))
	s.Run(bins.Civicgate, "reload", "--config", "caddyfile/Caddyfile.local", "--adapter", "caddyfile", "--address", s.Getenv("CIVICGATE_ADMIN"))
	resp, body = do(t, s, "POST", "/v1/graphql", key, "application/json", strings.NewReader(billsDoc))
	if resp.StatusCode != 502 || body != `{"error":"Bad Gateway"}` {
		t.Fatalf("refusing upstream: %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
}
