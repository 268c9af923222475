package httpapi

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/civicgate/civicgate/internal/boundedlru"
	"github.com/civicgate/civicgate/modules/contract"
)

// The gateway signs one assertion per key and re-signs it only when half its
// lifetime has passed (modules/auth cache.go), so recordsd sees the same
// assertion on request after request. Verifying it again each time (parse,
// HMAC, JSON) was about a third of the allocations of a page. verifiedCache
// keeps the claims of assertions that verified, by their SHA-256, until they
// expire: a hit costs a hash and a map lookup. Failures are not kept (a
// flood of forged assertions cannot fill it), and an entry past its exp is
// refused and dropped as VerifyIdentity would refuse it.

// verifiedCacheSize bounds the assertions kept: one per key active in the
// last minute, per gateway.
const verifiedCacheSize = 10_000

type verifiedCache struct {
	mu  sync.Mutex
	lru *boundedlru.LRU[[sha256.Size]byte, *contract.Claims]
}

func newVerifiedCache() *verifiedCache {
	return &verifiedCache{lru: boundedlru.New(boundedlru.Options[[sha256.Size]byte, *contract.Claims]{MaxLen: verifiedCacheSize})}
}

// verify returns the claims of token at now: from the cache while they have
// not expired, else from VerifyIdentity (and kept when it succeeds). The
// claims are shared by every request that presents the token: read-only.
func (c *verifiedCache) verify(secret []byte, token string, now time.Time) (*contract.Claims, error) {
	key := sha256.Sum256([]byte(token))
	c.mu.Lock()
	claims, ok := c.lru.Get(key)
	if ok && !now.Before(claims.ExpiresAt.Time) {
		c.lru.Delete(key)
		ok = false
	}
	c.mu.Unlock()
	if ok {
		return claims, nil
	}
	claims, err := contract.VerifyIdentity(secret, token, now)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.lru.Put(key, claims)
	c.mu.Unlock()
	return claims, nil
}
