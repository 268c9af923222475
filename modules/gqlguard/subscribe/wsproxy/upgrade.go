package wsproxy

import (
	"net/http"
	"strings"
)

// IsUpgrade reports whether r asks for a WebSocket upgrade (Connection:
// upgrade and Upgrade: websocket, case-insensitive, in any list position).
func IsUpgrade(r *http.Request) bool {
	return headerHasToken(r.Header, "Connection", "upgrade", strings.EqualFold) &&
		headerHasToken(r.Header, "Upgrade", "websocket", strings.EqualFold)
}

// Offers reports whether the Sec-WebSocket-Protocol header offers
// Subprotocol (comma-separated, possibly on several header lines).
func Offers(r *http.Request) bool {
	return headerHasToken(r.Header, "Sec-Websocket-Protocol", Subprotocol, equalString)
}

// headerHasToken reports whether one of the comma-separated elements of the
// header's lines equals token by equal.
func headerHasToken(h http.Header, name, token string, equal func(a, b string) bool) bool {
	for _, line := range h.Values(name) {
		for elem := range strings.SplitSeq(line, ",") {
			if equal(strings.TrimSpace(elem), token) {
				return true
			}
		}
	}
	return false
}

// offerOnlySubprotocol rewrites r's Sec-WebSocket-Protocol header to offer
// Subprotocol alone, and drops Sec-WebSocket-Extensions, so that the
// upstream cannot choose another protocol or a compression the filter does
// not read.
func offerOnlySubprotocol(r *http.Request) {
	r.Header.Set("Sec-Websocket-Protocol", Subprotocol)
	r.Header.Del("Sec-Websocket-Extensions")
}

// equalString is == as a function (subprotocol names are case-sensitive,
// RFC 6455 section 4.1).
func equalString(a, b string) bool { return a == b }
