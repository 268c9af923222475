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
}

// New returns a Codec; the secret must be at least MinSecretLen bytes.
func New(secret []byte) (*Codec, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("cursor: secret must be at least %d bytes", MinSecretLen)
	}
	return &Codec{secret: append([]byte(nil), secret...)}, nil
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

// Encode returns the signed cursor for keys under binding.
func (c *Codec) Encode(binding string, keys []string) string {
	body, _ := json.Marshal(payload{Keys: keys, Filter: binding})
	mac := hmac.New(sha256.New, c.secret)
	mac.Write(body)
	return base64.RawURLEncoding.EncodeToString(append(body, mac.Sum(nil)...))
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
