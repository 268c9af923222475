package document

import (
	"hash/maphash"
	"sync"

	"github.com/civicgate/civicgate/internal/boundedlru"
)

// Cache is a bounded LRU of compiled documents keyed by (schema hash,
// document hash). An entry also keeps the document text and a hit compares
// it, so a hash collision can never hand one document another's outcome.
// Lookups hash the query string with maphash and allocate nothing; the list
// is the gateway's one LRU (internal/boundedlru, docs/design.md D44) under
// this cache's mutex.
type Cache struct {
	seed maphash.Seed
	mu   sync.Mutex
	max  int
	lru  *boundedlru.LRU[CacheKey, cached]
}

// CacheKey is a document's key; raw is set when doc hashes the still JSON-escaped text of the
// query (a separate key space: an escaped text is not the document it
// decodes to).
type CacheKey struct {
	schema, doc uint64
	raw         bool
}

// cached is one entry: the text hashed into its key and what it compiled to.
type cached struct {
	text string
	doc  *Doc
}

// maxCachedQuery bounds the memory an entry may pin: documents above it are
// compiled every time (such documents are rare and mostly hostile).
const maxCachedQuery = 16 << 10

// NewCache returns a cache of size entries (none when size ≤ 0).
func NewCache(size int) *Cache {
	return &Cache{seed: maphash.MakeSeed(), max: size,
		lru: boundedlru.New(boundedlru.Options[CacheKey, cached]{MaxLen: max(size, 1)})}
}

// Key is the cache key of query for the schema of hash schema.
func (c *Cache) Key(schema uint64, query string) CacheKey {
	return CacheKey{schema: schema, doc: maphash.String(c.seed, query)}
}

// KeyBytes is Key for a text held in bytes; raw: the text is JSON-escaped.
func (c *Cache) KeyBytes(schema uint64, text []byte, raw bool) CacheKey {
	return CacheKey{schema: schema, doc: maphash.Bytes(c.seed, text), raw: raw}
}

// Get returns the compiled document for query, or nil. A key whose text
// differs (a hash collision) is a miss; it was still marked used, which only
// changes which entry goes first.
func (c *Cache) Get(k CacheKey, query string) *Doc {
	if c.max <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(k)
	if !ok || e.text != query {
		return nil
	}
	return e.doc
}

// GetBytes returns the compiled document stored under k for text, or nil.
func (c *Cache) GetBytes(k CacheKey, text []byte) *Doc {
	if c.max <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(k)
	if !ok || e.text != string(text) {
		return nil
	}
	return e.doc
}

// Put stores doc under k (for text), evicting the least recently used
// entry when full.
func (c *Cache) Put(k CacheKey, text string, doc *Doc) {
	if c.max <= 0 || len(doc.Query) > maxCachedQuery || len(text) > maxCachedQuery {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Put(k, cached{text: text, doc: doc})
}

// Len is the number of entries.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
