package reliability

import (
	"crypto/sha1" //nolint:gosec // RFC 6455 names SHA-1 for Sec-WebSocket-Accept
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/wsframe"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// A hostile upstream cannot inflate a subscription's errors on its
// operation's row (docs/design.md D83), through the built gateway
// tunnelling graphql-transport-ws: for each subscribe it answers error
// three times for its id, error for an id nobody opened, and the error again
// split in two fragments around a ping. The row counts one request and one
// error per subscription.

const suberrCaddyfile = `{
	admin {$CIVICGATE_ADMIN}
	civic_auth {
		keys postgres {env.DATABASE_URL}
		environment live
		identity_secret {env.CIVIC_IDENTITY_SECRET}
		tier feed 1000000/m feed
	}
	civic_rate_limit {
		redis {env.REDIS_URL}
		key_prefix {$CIVICGATE_RL_PREFIX}
		usage {
			postgres {env.DATABASE_URL}
			flush_interval 1s
		}
	}
}

http://{$SUBERR_ADDR} {
	route /graphql {
		civic_auth
		civic_rate_limit
		graphql_guard {
			schema {$SUBERR_SCHEMA}
			operations query subscription
			family feed ticks
			subscriptions {
				max_per_key 100
			}
		}
		reverse_proxy {$SUBERR_UPSTREAM}
	}
}
`

func TestSubscriptionErrorsFromAHostileUpstream(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(hostileErrorUpstream))
	t.Cleanup(up.Close)
	s := stack.New(t, &bins)
	s.Run(bins.Civicgate, "keys", "migrate")
	addr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	schema := filepath.Join(s.Dir, "feed.graphqls")
	cf := filepath.Join(s.Dir, "Caddyfile")
	if err := os.WriteFile(schema, []byte("type Query { ok: Int }\ntype Subscription { ticks: Int }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cf, []byte(suberrCaddyfile), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Setenv("SUBERR_ADDR", addr)
	s.Setenv("SUBERR_SCHEMA", schema)
	s.Setenv("SUBERR_UPSTREAM", up.Listener.Addr().String())
	gw := s.SpawnProc("civicgate", bins.Civicgate, "run", "--config", cf, "--adapter", "caddyfile")
	stack.WaitFor(t, 60*time.Second, "the gateway", func() error {
		if gw.Exited() {
			t.Fatalf("civicgate exited while starting; log %s", gw.Log)
		}
		resp, err := http.Post("http://"+addr+"/graphql", "application/json", strings.NewReader(`{}`))
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	org := "suberr-" + testenv.RandomSuffix(6)
	key, _ := s.IssueKey(org, "feed", "live")

	ws := (&anyBackend{t: t, Addr: addr}).dialWS(key)
	ws.init()
	for _, id := range []string{"a", "b", "c"} {
		ws.send(`{"id":"` + id + `","type":"subscribe","payload":{"query":"subscription Ticks { ticks }"}}`)
		deadline := time.Now().Add(10 * time.Second)
		for range 4 {
			if m := ws.next(deadline); m.Type != "error" {
				t.Fatalf("subscription %s: %+v", id, m)
			}
		}
		for _, want := range []byte{opText, opPing, opCont} {
			if f, err := ws.read(deadline); err != nil || f.op != want {
				t.Fatalf("subscription %s: frame %#x %v, want %#x", id, f.op, err, want)
			}
		}
	}

	stack.WaitFor(t, 60*time.Second, "one row of 3 requests and 3 errors", func() error {
		out, err := s.RunErr(bins.Civicgate, "usage", "operations", "--org", org, "--since", "1h", "--json")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		var a struct {
			Operations []hostileOperation `json:"operations"`
		}
		if err := json.Unmarshal([]byte(out), &a); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		if len(a.Operations) != 1 || a.Operations[0].Name != "Ticks" || a.Operations[0].Requests != 3 || a.Operations[0].Errors != 3 {
			return fmt.Errorf("rows %+v", a.Operations)
		}
		return nil
	})
}

// hostileErrorUpstream acknowledges connection_init and answers every
// subscribe with error messages: three for its id, one for an id nobody
// opened, then its id's again in two fragments around a ping.
func hostileErrorUpstream(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Sec-Websocket-Key")
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")) //nolint:gosec // RFC 6455
	_, _ = io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Accept: "+base64.StdEncoding.EncodeToString(sum[:])+"\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n")
	for {
		payload, err := wsframe.ReadClientFrame(brw.Reader)
		if err != nil {
			return
		}
		var m struct{ Type, ID string }
		if json.Unmarshal(payload, &m) != nil {
			continue
		}
		var out []byte
		switch m.Type {
		case "connection_init":
			out = serverFrame(out, 0x81, []byte(`{"type":"connection_ack"}`))
		case "subscribe":
			errMsg := []byte(`{"id":"` + m.ID + `","type":"error","payload":[{"message":"no"}]}`)
			for range 3 {
				out = serverFrame(out, 0x81, errMsg)
			}
			out = serverFrame(out, 0x81, []byte(`{"id":"stranger","type":"error","payload":[{"message":"no"}]}`))
			half := len(errMsg) / 2
			out = serverFrame(out, 0x01, errMsg[:half]) // text, not final
			out = serverFrame(out, 0x89, nil)           // ping
			out = serverFrame(out, 0x80, errMsg[half:]) // continuation, final
		default:
			continue
		}
		if _, err := conn.Write(out); err != nil {
			return
		}
	}
}

// serverFrame appends an unmasked frame of first byte b0 (FIN and opcode)
// and a payload under 126 bytes.
func serverFrame(dst []byte, b0 byte, payload []byte) []byte {
	return append(append(dst, b0, byte(len(payload))), payload...)
}
