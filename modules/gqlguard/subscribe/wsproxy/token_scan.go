package wsproxy

import (
	"bytes"
	"encoding/json"
	"strings"
)

// containsToken reports whether msg, a JSON text, carries token: as is, or
// spelled with JSON escapes inside a string (e.g. \u0041 for A).
func containsToken(msg []byte, token string) bool {
	if token == "" {
		return false
	}
	if bytes.Contains(msg, []byte(token)) {
		return true
	}
	if bytes.IndexByte(msg, '\\') < 0 {
		return false
	}
	return decodedStringsContain(msg, token)
}

// decodedStringsContain reports whether a string (member name or value) of
// the JSON text msg contains token once unescaped. Invalid JSON is reported
// as not containing it (the message is refused as invalid anyway).
func decodedStringsContain(msg []byte, token string) bool {
	dec := json.NewDecoder(bytes.NewReader(msg))
	for {
		t, err := dec.Token()
		if err != nil { // io.EOF or invalid JSON
			return false
		}
		if s, ok := t.(string); ok && strings.Contains(s, token) {
			return true
		}
	}
}
