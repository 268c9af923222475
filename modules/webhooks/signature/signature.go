// Package signature signs webhook deliveries exactly as Standard Webhooks v1
// (https://www.standardwebhooks.com) specifies: headers webhook-id,
// webhook-timestamp and webhook-signature, the signature being
// "v1,<base64 HMAC-SHA256(key, id.timestamp.body)>" where key is the base64
// part of the secret "whsec_<base64>". Several space-separated signatures are
// sent while a rotated-out secret is still accepted (docs/design.md D15).
package signature

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names (Standard Webhooks v1) and the spec's neutral alias.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
	// HeaderService carries the same value as HeaderSignature (docs/api.md "Verifying signatures").
	HeaderService = "X-Service-Signature"
)

// Prefix starts every secret.
const Prefix = "whsec_"

// KeyLen is the number of random bytes in a generated secret (Standard
// Webhooks allows 24 to 64).
const KeyLen = 32

// ErrBadSecret is returned for a secret that is not whsec_<base64 of 24..64 bytes>.
var ErrBadSecret = errors.New("signature: secret must be whsec_ followed by base64 of 24 to 64 bytes")

// NewSecret returns a fresh random secret "whsec_<base64>".
func NewSecret() (string, error) {
	b := make([]byte, KeyLen)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("signature: random: %w", err)
	}
	return Prefix + base64.StdEncoding.EncodeToString(b), nil
}

// Key decodes a secret into its HMAC key.
func Key(secret string) ([]byte, error) {
	rest, ok := strings.CutPrefix(secret, Prefix)
	if !ok {
		return nil, ErrBadSecret
	}
	k, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(k) < 24 || len(k) > 64 {
		return nil, ErrBadSecret
	}
	return k, nil
}

// Sign returns one "v1,<base64>" signature of body for msgID at ts with key.
func Sign(key []byte, msgID string, ts time.Time, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msgID))
	m.Write([]byte{'.'})
	m.Write(strconv.AppendInt(nil, ts.Unix(), 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// SetHeaders sets the Standard Webhooks headers (and X-Service-Signature) on h
// for body, signed with every key (newest first; several while a rotated
// secret overlaps).
func SetHeaders(h http.Header, keys [][]byte, msgID string, ts time.Time, body []byte) {
	sigs := make([]string, 0, len(keys))
	for _, k := range keys {
		sigs = append(sigs, Sign(k, msgID, ts, body))
	}
	v := strings.Join(sigs, " ")
	h.Set(HeaderID, msgID)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, v)
	h.Set(HeaderService, v)
}
