// Package keystore holds civicgate's API keys (docs/design.md D8): the key format,
// the SHA-256 hashing at rest, the PostgreSQL schema and its administrative
// operations (used by `civicgate keys`), the lookup the gateway performs, and
// the hashed keys file for setups without PostgreSQL.
package keystore

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// Environments a key can belong to.
const (
	EnvLive = "live"
	EnvTest = "test"
)

// Key statuses.
const (
	StatusActive  = "active"
	StatusRevoked = "revoked"
	StatusRotated = "rotated"
	// StatusRotating is a key retired by `keys rotate --overlap D`: still
	// accepted, and one of the organization's two live keys, until its
	// RotatesOut deadline; from then on it is rotated out (EffectiveStatus).
	StatusRotating = "rotating"
)

// Organization statuses.
const (
	OrgActive    = "active"
	OrgSuspended = "suspended"
	// OrgDeleted is an organization removed by `keys delete-org`: its keys are
	// all revoked; its rows are kept for audit and its name is not reused.
	OrgDeleted = "deleted"
)

// SecretLen is the number of base62 characters after "cg_<env>_": 32 random
// bytes always encode to at most 43 base62 digits; shorter encodings are
// left-padded with '0' so every key has the same length.
const SecretLen = 43

// PrefixLen is how many leading characters of a key are kept for display.
const PrefixLen = 12

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Hash is the SHA-256 of a key, the only form in which keys are stored.
type Hash [sha256.Size]byte

// HashKey hashes a key. Keys fit a stack buffer, so hashing one does not
// allocate.
func HashKey(key string) Hash {
	var buf [64]byte
	return sha256.Sum256(append(buf[:0], key...))
}

// String is the lowercase hex form of the hash.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// ParseHash parses the hex form of a hash.
func ParseHash(s string) (Hash, error) {
	var h Hash
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(h) {
		return h, fmt.Errorf("keystore: bad key hash %q", s)
	}
	copy(h[:], b)
	return h, nil
}

// ValidEnv reports whether env is a known environment.
func ValidEnv(env string) bool { return env == EnvLive || env == EnvTest }

// WellFormed reports whether key has the shape cg_<env>_<43 base62 chars>.
func WellFormed(key string) bool {
	var rest string
	switch {
	case len(key) == len("cg_live_")+SecretLen && key[:8] == "cg_live_":
		rest = key[8:]
	case len(key) == len("cg_test_")+SecretLen && key[:8] == "cg_test_":
		rest = key[8:]
	default:
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}

// NewKey returns a fresh random key for env.
func NewKey(env string) (string, error) {
	if !ValidEnv(env) {
		return "", fmt.Errorf("keystore: environment %q is not live or test", env)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("keystore: random: %w", err)
	}
	n := new(big.Int).SetBytes(raw[:])
	digits := make([]byte, SecretLen)
	for i := range digits {
		digits[i] = '0'
	}
	base := big.NewInt(62)
	mod := new(big.Int)
	for i := SecretLen - 1; n.Sign() > 0; i-- {
		n.DivMod(n, base, mod)
		digits[i] = base62[mod.Int64()]
	}
	return "cg_" + env + "_" + string(digits), nil
}

// newID returns prefix + 16 random base62 characters.
func newID(prefix string) (string, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("keystore: random: %w", err)
	}
	b := []byte(prefix)
	for _, c := range raw {
		b = append(b, base62[int(c)%62])
	}
	return string(b), nil
}

// Record is what the gateway needs to know about a key.
type Record struct {
	KeyID     string
	OrgID     string
	OrgName   string
	OrgStatus string
	Env       string
	Tier      string
	Status    string
	// RotatesOut is when a rotating key stops being accepted (zero unless
	// Status is StatusRotating).
	RotatesOut time.Time
	// ExpiresAt is when the key stops being accepted (zero: never), compared
	// with the clock at each request, cached or not (docs/design.md D71).
	ExpiresAt time.Time
	// Name and Labels say whose key it is (Lifecycle); Labels is nil when
	// the key has none and is never modified once in a Record (the cache
	// shares it between requests).
	Name   string
	Labels map[string]string
	// GrantRequests and GrantCost are the organization's grant (0: none or
	// the tier's figure), in force until GrantUntil, compared with the clock
	// at each request (docs/design.md D81).
	GrantRequests, GrantCost int64
	GrantUntil               time.Time
}

// Granted reports whether the record's organization has a grant in force at
// now.
func (r *Record) Granted(now time.Time) bool {
	return (r.GrantRequests > 0 || r.GrantCost > 0) && now.Before(r.GrantUntil)
}

// EffectiveStatus is the key's status at now: a rotating key whose deadline
// has come is rotated out, and an active or rotating key whose expiry has
// come is expired, without anyone running a command.
func (r *Record) EffectiveStatus(now time.Time) string {
	return lifeStatus(effectiveStatus(r.Status, r.RotatesOut, now), r.ExpiresAt, now)
}

// lifeStatus is status (already effective as to rotation), expired when the
// key is still live and its expiry has come.
func lifeStatus(status string, expiresAt, now time.Time) string {
	if (status == StatusActive || status == StatusRotating) && expired(expiresAt, now) {
		return StatusExpired
	}
	return status
}

func effectiveStatus(status string, rotatesOut, now time.Time) string {
	if status == StatusRotating && !now.Before(rotatesOut) {
		return StatusRotated
	}
	return status
}

// ErrNotFound is returned by lookups of a hash no key has.
var ErrNotFound = errors.New("keystore: key not found")

// KeyInfo is one row of a key listing; it never holds a key or a hash.
type KeyInfo struct {
	ID        string
	Org       string
	OrgStatus string
	Env       string
	Tier      string
	Prefix    string
	Status    string // the effective status (a rotating key past its deadline is "rotated", a live key past its expiry "expired")
	CreatedAt time.Time
	RetiredAt *time.Time
	// RotatesOutAt is the end of the key's rotation overlap: nil unless the
	// key was rotated with one, and nil for a key revoked before its overlap
	// ended (it never rotates out: the revocation, RetiredAt, ended it).
	RotatesOutAt *time.Time
	// ExpiresAt is the key's expiry (nil: none), Name and Labels its
	// lifecycle (docs/design.md D71).
	ExpiresAt *time.Time
	Name      string
	Labels    map[string]string
}

// rotatesOut is k's RotatesOutAt as List reports it (see KeyInfo).
func rotatesOut(k KeyInfo) *time.Time {
	if k.Status == StatusRevoked && k.RotatesOutAt != nil && (k.RetiredAt == nil || k.RotatesOutAt.After(*k.RetiredAt)) {
		return nil
	}
	return k.RotatesOutAt
}
