package auth

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// entry is a cached lookup: a key's record (or, with found false, the fact that
// no key has this hash) plus what the handler derives from it once.
type entry struct {
	found   bool
	rec     keystore.Record
	fetched time.Time
	// derived, immutable after creation
	tier     *tierPolicy // nil: tier unknown to this config
	keyIDVal any
	orgVal   any
	tierVal  any
	envVal   any
	// identity assertion, re-signed when half its lifetime has passed
	ident atomic.Pointer[signedIdentity]
	// staleUntil (unix ns): after a failed refresh the entry is served without
	// asking the store again until then, so an unreachable store costs one
	// lookup timeout per key per TTL, not one per request.
	staleUntil atomic.Int64
}

type signedIdentity struct {
	token string
	// header is []string{token} with len == cap, assigned to request headers
	// as is (read-only: Header.Add would copy it, Set replaces it).
	header  []string
	refresh time.Time
}

// keyCache is a bounded map of hash → entry. Entries past their TTL are
// refreshed from the store, but served stale while the store is unreachable.
type keyCache struct {
	mu     sync.RWMutex
	m      map[keystore.Hash]*entry
	max    int
	ttl    time.Duration
	negTTL time.Duration
}

func newKeyCache(max int, ttl, negTTL time.Duration) *keyCache {
	return &keyCache{m: make(map[keystore.Hash]*entry), max: max, ttl: ttl, negTTL: negTTL}
}

func (c *keyCache) get(h keystore.Hash) *entry {
	c.mu.RLock()
	e := c.m[h]
	c.mu.RUnlock()
	return e
}

// fresh reports whether e may be used without asking the store.
func (c *keyCache) fresh(e *entry, now time.Time) bool {
	ttl := c.ttl
	if !e.found {
		ttl = c.negTTL
	}
	return now.Sub(e.fetched) < ttl || now.UnixNano() < e.staleUntil.Load()
}

func (c *keyCache) put(h keystore.Hash, e *entry) {
	c.mu.Lock()
	if _, ok := c.m[h]; !ok && len(c.m) >= c.max {
		for k := range c.m { // evict an arbitrary entry
			delete(c.m, k)
			break
		}
	}
	c.m[h] = e
	c.mu.Unlock()
}

func (c *keyCache) deleteHash(h keystore.Hash) {
	c.mu.Lock()
	delete(c.m, h)
	c.mu.Unlock()
}

func (c *keyCache) deleteOrg(orgID string) {
	c.mu.Lock()
	for h, e := range c.m {
		if e.rec.OrgID == orgID {
			delete(c.m, h)
		}
	}
	c.mu.Unlock()
}

func (c *keyCache) flush() {
	c.mu.Lock()
	clear(c.m)
	c.mu.Unlock()
}

// families are the families e's tier is entitled to (none for a tier this
// configuration does not define), asserted upstream in the identity's fam claim.
func (e *entry) families() []string {
	if e.tier == nil {
		return nil
	}
	return e.tier.families
}
