// Package cursor signs and verifies recordsd's opaque keyset cursors (docs/design.md D5).
//
// A cursor is URL-safe base64 (no padding) of a JSON payload followed by its 32-byte HMAC-SHA256. The payload
// carries the sort-key values of the last row of a page (ending with its id) and a hash binding the cursor to
// the query family and its normalised filter set.
package cursor

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"sync"
)

// MinSecretLen is the shortest accepted HMAC key.
const MinSecretLen = 32

// maxLen bounds the encoded size we are willing to decode.
const maxLen = 2048

// ErrInvalid is returned for any cursor that is malformed, tampered with, or bound to another filter set.
var ErrInvalid = errors.New("invalid cursor")

// Codec signs and verifies cursors with one secret.
type Codec struct {
	secret []byte
	macs   sync.Pool // of hash.Hash: HMAC-SHA256 under secret
}

// New returns a Codec; the secret must be at least MinSecretLen bytes.
func New(secret []byte) (*Codec, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("cursor: secret must be at least %d bytes", MinSecretLen)
	}
	c := &Codec{secret: append([]byte(nil), secret...)}
	c.macs.New = func() any { return hmac.New(sha256.New, c.secret) }
	return c, nil
}

type payload struct {
	Keys   []string `json:"k"`
	Filter string   `json:"f"`
}

// Binding hashes a family name and a normalised filter value (any JSON-marshalable value with
// deterministic encoding, e.g. a struct) into the string a cursor is bound to.
func Binding(family string, filter any) string {
	b, err := json.Marshal(filter)
	if err != nil {
		// Filters are plain structs of strings and ints; Marshal cannot fail on them.
		b = []byte(fmt.Sprintf("%#v", filter))
	}
	h := sha256.New()
	h.Write([]byte(family))
	h.Write([]byte{0})
	h.Write(b)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}

// Encode returns the signed cursor for keys under binding. Every page with a next page makes one, so the
// payload is written by hand when json.Marshal would write exactly the same bytes (appendPayload), and the
// HMAC state is reused.
func (c *Codec) Encode(binding string, keys []string) string {
	buf := make([]byte, 0, 64+len(binding)+16*len(keys)+sha256.Size)
	body, ok := appendPayload(buf, keys, binding)
	if !ok {
		body, _ = json.Marshal(payload{Keys: keys, Filter: binding})
	}
	mac := c.macs.Get().(hash.Hash)
	mac.Reset()
	mac.Write(body)
	body = mac.Sum(body)
	c.macs.Put(mac)
	return base64.RawURLEncoding.EncodeToString(body)
}

// appendPayload appends the JSON of payload{keys, binding} as json.Marshal writes it, when every string is
// plain ASCII that json.Marshal copies as it is (no quote, backslash, control character or HTML-escaped
// <, >, &); ok false otherwise, and the caller marshals.
func appendPayload(dst []byte, keys []string, binding string) ([]byte, bool) {
	for _, k := range keys {
		if !plainJSON(k) {
			return dst, false
		}
	}
	if !plainJSON(binding) {
		return dst, false
	}
	if keys == nil {
		dst = append(dst, `{"k":null`...)
	} else {
		dst = append(dst, `{"k":[`...)
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '"')
			dst = append(dst, k...)
			dst = append(dst, '"')
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"f":"`...)
	dst = append(dst, binding...)
	return append(dst, `"}`...), true
}

// plainJSON reports whether json.Marshal writes s between its quotes unchanged.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b < 0x20 || b >= 0x80, b == '"', b == '\\', b == '<', b == '>', b == '&':
			return false
		}
	}
	return true
}

// Decode verifies s and returns its keys; want is the number of keys the family's order has. Any failure
// is ErrInvalid (wrapped with a reason that is safe to show).
func (c *Codec) Decode(s, binding string, want int) ([]string, error) {
	if len(s) == 0 || len(s) > maxLen {
		return nil, fmt.Errorf("%w: bad length", ErrInvalid)
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) <= sha256.Size {
		return nil, fmt.Errorf("%w: not a cursor", ErrInvalid)
	}
	body, sig := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
	mac := hmac.New(sha256.New, c.secret)
	mac.Write(body)
	if !hmac.Equal(sig, mac.Sum(nil)) {
		return nil, fmt.Errorf("%w: signature mismatch", ErrInvalid)
	}
	var p payload
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("%w: bad payload", ErrInvalid)
	}
	if !hmac.Equal([]byte(p.Filter), []byte(binding)) {
		return nil, fmt.Errorf("%w: cursor belongs to a different query or filter set", ErrInvalid)
	}
	if len(p.Keys) != want {
		return nil, fmt.Errorf("%w: wrong key count", ErrInvalid)
	}
	return p.Keys, nil
}
