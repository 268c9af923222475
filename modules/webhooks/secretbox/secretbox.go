// Package secretbox seals webhook signing secrets at rest. The secrets must be
// recoverable (deliveries are signed with them), so they cannot be hashed like
// API keys; they are encrypted with AES-256-GCM under a key derived from
// operator-supplied key material (the civic_webhooks secret_key, from the
// environment), with the endpoint id as associated data so a sealed secret
// cannot be moved to another endpoint's row. A database dump alone reveals no
// secret.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// MinMaterial is the minimum length of key material.
const MinMaterial = 32

// label separates this use of the key material from any other (the local
// development Caddyfile may reuse the identity secret as material).
const label = "civicgate webhook secrets v1"

// ErrOpen is returned when no key opens a sealed value.
var ErrOpen = errors.New("secretbox: cannot open sealed secret (wrong secret_key?)")

// Box seals with its first key and opens with any of them, so the key
// material can be rotated: put the new material first, keep the old one until
// every endpoint secret has been re-sealed (rotated).
type Box struct {
	aeads []cipher.AEAD
}

// New derives one AES-256-GCM key from each material (each at least
// MinMaterial bytes).
func New(materials ...[]byte) (*Box, error) {
	if len(materials) == 0 {
		return nil, errors.New("secretbox: no key material")
	}
	b := &Box{}
	for i, m := range materials {
		if len(m) < MinMaterial {
			return nil, fmt.Errorf("secretbox: key material %d is shorter than %d bytes", i+1, MinMaterial)
		}
		mac := hmac.New(sha256.New, m)
		mac.Write([]byte(label))
		block, err := aes.NewCipher(mac.Sum(nil))
		if err != nil {
			return nil, fmt.Errorf("secretbox: %w", err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("secretbox: %w", err)
		}
		b.aeads = append(b.aeads, aead)
	}
	return b, nil
}

// Seal encrypts plaintext bound to ad (nonce ‖ ciphertext).
func (b *Box) Seal(plaintext, ad []byte) ([]byte, error) {
	a := b.aeads[0]
	nonce := make([]byte, a.NonceSize(), a.NonceSize()+len(plaintext)+a.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("secretbox: random: %w", err)
	}
	return a.Seal(nonce, nonce, plaintext, ad), nil
}

// Open decrypts a value sealed with any of the box's keys for ad.
func (b *Box) Open(sealed, ad []byte) ([]byte, error) {
	p, _, err := b.OpenIndex(sealed, ad)
	return p, err
}

// OpenIndex is Open that also says which key opened the value (0: the
// sealing key; more: an older one, so the value should be re-sealed).
func (b *Box) OpenIndex(sealed, ad []byte) ([]byte, int, error) {
	for i, a := range b.aeads {
		n := a.NonceSize()
		if len(sealed) < n+a.Overhead() {
			return nil, 0, ErrOpen
		}
		if p, err := a.Open(nil, sealed[:n], sealed[n:], ad); err == nil {
			return p, i, nil
		}
	}
	return nil, 0, ErrOpen
}
