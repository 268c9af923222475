package auth

import (
	"github.com/caddyserver/caddy/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

// resolvedKey is what a key hash resolved to, cached: the key's record (or,
// with found false, the fact that no key has this hash) plus what the handler
// derives from it once — the caller it records in the request value, the
// {civic.*} placeholders it answers, and the Watcher of the credential
// (watch.go): one immutable value per key, shared by its requests.
type resolvedKey struct {
	found   bool
	rec     keystore.Record
	fetched time.Time
	// derived, immutable after creation
	tier *tierPolicy // nil: tier unknown to this config
	// caller is the request value's Caller (contract.Request.SetCredential)
	// and the identity assertion's subject.
	caller   contract.Caller
	keyIDVal any
	orgVal   any
	tierVal  any
	envVal   any
	// placeholders answers the {civic.*} placeholders of this key (built
	// once: a request adds it to the replacer without allocating a closure
	// or growing the replacer's map).
	placeholders caddy.ReplacerFunc
	// grantPlaceholders answers them with the organization's granted figures
	// (nil: no grant): the handler uses it while rec.Granted (docs/design.md D81).
	grantPlaceholders          caddy.ReplacerFunc
	grantRateVal, grantCostVal any
	// what WatchCredential registers (found entries only)
	hash    keystore.Hash
	watches *watchRegistry
	app     *App // signs fresh assertions (FreshIdentity)
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

// keyCache holds lookups in two bounded maps: known keys (found entries) and
// unknown hashes (ErrNotFound). They are bounded separately, so a flood of
// random keys can fill the unknown map but never evict a known key. Entries
// past their TTL are refreshed from the store, but known keys are served stale
// while the store is unreachable.
type keyCache struct {
	mu         sync.RWMutex
	known      map[keystore.Hash]*resolvedKey
	unknown    map[keystore.Hash]*resolvedKey
	maxKnown   int
	maxUnknown int
	ttl        time.Duration
	negTTL     time.Duration
}

func newKeyCache(maxKnown, maxUnknown int, ttl, negTTL time.Duration) *keyCache {
	return &keyCache{
		known: make(map[keystore.Hash]*resolvedKey), unknown: make(map[keystore.Hash]*resolvedKey),
		maxKnown: maxKnown, maxUnknown: maxUnknown, ttl: ttl, negTTL: negTTL,
	}
}

func (c *keyCache) get(h keystore.Hash) *resolvedKey {
	c.mu.RLock()
	e := c.known[h]
	if e == nil {
		e = c.unknown[h]
	}
	c.mu.RUnlock()
	return e
}

// fresh reports whether e may be used without asking the store.
func (c *keyCache) fresh(e *resolvedKey, now time.Time) bool {
	ttl := c.ttl
	if !e.found {
		ttl = c.negTTL
	}
	return now.Sub(e.fetched) < ttl || now.UnixNano() < e.staleUntil.Load()
}

// put stores e in the map its kind belongs to (and removes h from the other).
func (c *keyCache) put(h keystore.Hash, e *resolvedKey) {
	c.mu.Lock()
	if e.found {
		delete(c.unknown, h)
		putBounded(c.known, c.maxKnown, h, e)
	} else {
		delete(c.known, h)
		putBounded(c.unknown, c.maxUnknown, h, e)
	}
	c.mu.Unlock()
}

// putBounded sets m[h] = e, first evicting an arbitrary entry when m is full.
func putBounded(m map[keystore.Hash]*resolvedKey, max int, h keystore.Hash, e *resolvedKey) {
	if _, ok := m[h]; !ok && len(m) >= max {
		for k := range m {
			delete(m, k)
			break
		}
	}
	m[h] = e
}

func (c *keyCache) deleteHash(h keystore.Hash) {
	c.mu.Lock()
	delete(c.known, h)
	delete(c.unknown, h)
	c.mu.Unlock()
}

func (c *keyCache) deleteOrg(orgID string) {
	c.mu.Lock()
	for h, e := range c.known {
		if e.rec.OrgID == orgID {
			delete(c.known, h)
		}
	}
	c.mu.Unlock()
}

func (c *keyCache) flush() {
	c.mu.Lock()
	clear(c.known)
	clear(c.unknown)
	c.mu.Unlock()
}

// sizes returns how many known and unknown entries are held.
func (c *keyCache) sizes() (known, unknown int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.known), len(c.unknown)
}

// families are the families e's tier is entitled to (none for a tier this
// configuration does not define), asserted upstream in the identity's fam claim.
func (e *resolvedKey) families() []string {
	if e.tier == nil {
		return nil
	}
	return e.tier.families
}
