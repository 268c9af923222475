package gqlguard

import (
	"hash/maphash"
	"sync"
)

// docCache is a bounded LRU of compiled documents keyed by (schema hash,
// document hash). An entry also keeps the document text and a hit compares
// it, so a hash collision can never hand one document another's outcome.
// Lookups hash the query string with maphash and allocate nothing.
type docCache struct {
	seed maphash.Seed
	mu   sync.Mutex
	max  int
	m    map[cacheKey]*cacheNode
	head cacheNode // sentinel: head.next is the most recent, head.prev the least
}

// cacheKey: raw is set when doc hashes the still JSON-escaped text of the
// query (a separate key space: an escaped text is not the document it
// decodes to).
type cacheKey struct {
	schema, doc uint64
	raw         bool
}

type cacheNode struct {
	key        cacheKey
	text       string // the text hashed into key.doc
	doc        *compiledDoc
	prev, next *cacheNode
}

// maxCachedQuery bounds the memory an entry may pin: documents above it are
// compiled every time (such documents are rare and mostly hostile).
const maxCachedQuery = 16 << 10

func newDocCache(size int) *docCache {
	c := &docCache{seed: maphash.MakeSeed(), max: size, m: make(map[cacheKey]*cacheNode, max(size, 0))}
	c.head.prev, c.head.next = &c.head, &c.head
	return c
}

func (c *docCache) key(schema uint64, query string) cacheKey {
	return cacheKey{schema: schema, doc: maphash.String(c.seed, query)}
}

// keyBytes is key for a text held in bytes; raw: the text is JSON-escaped.
func (c *docCache) keyBytes(schema uint64, text []byte, raw bool) cacheKey {
	return cacheKey{schema: schema, doc: maphash.Bytes(c.seed, text), raw: raw}
}

// get returns the compiled document for query, or nil.
func (c *docCache) get(k cacheKey, query string) *compiledDoc {
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

// getBytes returns the compiled document stored under k for text, or nil.
func (c *docCache) getBytes(k cacheKey, text []byte) *compiledDoc {
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

// put stores doc under k (for text), evicting the least recently used
// entry when full.
func (c *docCache) put(k cacheKey, text string, doc *compiledDoc) {
	if c.max <= 0 || len(doc.query) > maxCachedQuery || len(text) > maxCachedQuery {
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

func (c *docCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

func (c *docCache) unlink(n *cacheNode) {
	n.prev.next, n.next.prev = n.next, n.prev
}

func (c *docCache) pushFront(n *cacheNode) {
	n.prev, n.next = &c.head, c.head.next
	c.head.next.prev = n
	c.head.next = n
}
