package gqlguard

import (
	"fmt"
	"testing"
)

// TestWebSocketUpgradeRefusals: where subscriptions do not pass (the shipped
// /v1/graphql sets operations query) an upgrade is a GET like any other
// (405); where they do, only graphql-transport-ws is accepted (the legacy
// subscriptions-transport-ws "graphql-ws" protocol cannot be checked).
func TestWebSocketUpgradeRefusals(t *testing.T) {
	s := startCaddy(t, fmt.Sprintf(`
	route /queries {
		graphql_guard {
			schema %[1]s
			operations query
		}
		%[2]s
	}
	route /subs {
		graphql_guard {
			schema %[1]s
		}
		%[2]s
	}`, testSchemaPath(t), echo))
	upgrade := func(protocol string) map[string]string {
		return map[string]string{
			"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
			"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Protocol": protocol,
		}
	}
	resp, body := s.do(t, call{method: "GET", path: "/queries", ctype: "-", headers: upgrade("graphql-transport-ws")})
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" || body != `{"errors":[{"message":"Method not allowed: use POST"}]}` {
		t.Fatalf("upgrade where subscriptions do not pass: %d %q %s", resp.StatusCode, resp.Header.Get("Allow"), body)
	}
	resp, body = s.do(t, call{method: "GET", path: "/subs", ctype: "-", headers: upgrade("graphql-ws")})
	if resp.StatusCode != 400 || body != `{"errors":[{"message":"WebSocket subprotocol must be graphql-transport-ws"}]}` {
		t.Fatalf("legacy subprotocol: %d %s", resp.StatusCode, body)
	}
}
