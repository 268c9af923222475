package document

import (
	"hash/maphash"
	"sync"
)

// Cache is a bounded LRU of compiled documents keyed by (schema hash,
// document hash). An entry also keeps the document text and a hit compares
// it, so a hash collision can never hand one document another's outcome.
// Lookups hash the query string with maphash and allocate nothing.
type Cache struct {
	seed maphash.Seed
	mu   sync.Mutex
	max  int
	m    map[CacheKey]*cacheNode
	head cacheNode // sentinel: head.next is the most recent, head.prev the least
}

// CacheKey is a document's key; raw is set when doc hashes the still JSON-escaped text of the
// query (a separate key space: an escaped text is not the document it
// decodes to).
type CacheKey struct {
	schema, doc uint64
	raw         bool
}

type cacheNode struct {
	key        CacheKey
	text       string // the text hashed into key.doc
	doc        *Doc
	prev, next *cacheNode
}

// maxCachedQuery bounds the memory an entry may pin: documents above it are
// compiled every time (such documents are rare and mostly hostile).
const maxCachedQuery = 16 << 10

// NewCache returns a cache of size entries (none when size ≤ 0).
func NewCache(size int) *Cache {
	c := &Cache{seed: maphash.MakeSeed(), max: size, m: make(map[CacheKey]*cacheNode, max(size, 0))}
	c.head.prev, c.head.next = &c.head, &c.head
	return c
}

// Key is the cache key of query for the schema of hash schema.
func (c *Cache) Key(schema uint64, query string) CacheKey {
	return CacheKey{schema: schema, doc: maphash.String(c.seed, query)}
}

// KeyBytes is Key for a text held in bytes; raw: the text is JSON-escaped.
func (c *Cache) KeyBytes(schema uint64, text []byte, raw bool) CacheKey {
	return CacheKey{schema: schema, doc: maphash.Bytes(c.seed, text), raw: raw}
}

// Get returns the compiled document for query, or nil.
func (c *Cache) Get(k CacheKey, query string) *Doc {
	if c.max <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.m[k]
	if n == nil || n.text != query {
		return nil
	}
	c.unlink(n)
	c.pushFront(n)
	return n.doc
}

// GetBytes returns the compiled document stored under k for text, or nil.
func (c *Cache) GetBytes(k CacheKey, text []byte) *Doc {
	if c.max <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.m[k]
	if n == nil || n.text != string(text) {
		return nil
	}
	c.unlink(n)
	c.pushFront(n)
	return n.doc
}

// Put stores doc under k (for text), evicting the least recently used
// entry when full.
func (c *Cache) Put(k CacheKey, text string, doc *Doc) {
	if c.max <= 0 || len(doc.Query) > maxCachedQuery || len(text) > maxCachedQuery {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.m[k]; n != nil {
		n.doc, n.text = doc, text
		c.unlink(n)
		c.pushFront(n)
		return
	}
	if len(c.m) >= c.max {
		last := c.head.prev
		c.unlink(last)
		delete(c.m, last.key)
	}
	n := &cacheNode{key: k, text: text, doc: doc}
	c.m[k] = n
	c.pushFront(n)
}

// Len is the number of entries.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

func (c *Cache) unlink(n *cacheNode) {
	n.prev.next, n.next.prev = n.next, n.prev
}

func (c *Cache) pushFront(n *cacheNode) {
	n.prev, n.next = &c.head, c.head.next
	c.head.next.prev = n
	c.head.next = n
}
