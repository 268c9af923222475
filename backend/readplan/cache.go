package readplan

import (
	"hash/maphash"
	"sync"

	"github.com/civicgate/civicgate/internal/boundedlru"
	"github.com/vektah/gqlparser/v2/ast"
)

// maxDirectiveVariables bounds the @skip/@include variables a compiled operation may read (its plans are
// kept per combination of their values).
const maxDirectiveVariables = 8

// Cache keeps compiled operations by the hash of their query text and operation name, most recently used
// first, within a count and a byte bound (the text an entry keeps). Safe for concurrent use.
type Cache struct {
	seed maphash.Seed
	mu   sync.Mutex
	lru  *boundedlru.LRU[uint64, *Entry]
}

// NewCache returns a cache of at most maxEntries operations holding at most maxBytes of query text.
func NewCache(maxEntries int, maxBytes int64) *Cache {
	return &Cache{seed: maphash.MakeSeed(), lru: boundedlru.New(boundedlru.Options[uint64, *Entry]{
		MaxLen:  maxEntries,
		MaxCost: maxBytes,
		Cost:    func(e *Entry) int64 { return int64(len(e.query) + len(e.opName)) },
	})}
}

func (c *Cache) key(query, opName string) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(query)
	h.WriteByte(0)
	h.WriteString(opName)
	return h.Sum64()
}

// Get returns the entry of a document that parsed and validated before, or nil. A hash collision is a miss:
// the entry's own text is compared.
func (c *Cache) Get(query, opName string) *Entry {
	k := c.key(query, opName)
	c.mu.Lock()
	e, ok := c.lru.Get(k)
	c.mu.Unlock()
	if !ok || e.query != query || e.opName != opName {
		return nil
	}
	return e
}

// Add records op, the operation gqlgen selected from doc for query and opName after parsing and validating
// it, and returns its entry.
func (c *Cache) Add(query, opName string, doc *ast.QueryDocument, op *ast.OperationDefinition) *Entry {
	e := &Entry{query: query, opName: opName, doc: doc, op: op, plans: map[uint64]*Plan{}}
	e.directiveVars = directiveVariables(doc, op)
	e.uncompilable = len(e.directiveVars) > maxDirectiveVariables
	k := c.key(query, opName)
	c.mu.Lock()
	c.lru.Put(k, e)
	c.mu.Unlock()
	return e
}

// Len is the number of cached operations.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// Entry is one validated operation and its plans, compiled on first use for each combination of its
// @skip/@include variables.
type Entry struct {
	query, opName string
	doc           *ast.QueryDocument
	op            *ast.OperationDefinition
	directiveVars []string
	uncompilable  bool

	mu    sync.Mutex
	plans map[uint64]*Plan // by directive values; a nil plan: not compilable with them
}

// Operation is the entry's operation (for variable coercion).
func (e *Entry) Operation() *ast.OperationDefinition { return e.op }

// Plan returns the plan for the request's coerced variables, or nil when the operation cannot be compiled
// with them (the request is the reference executor's).
func (e *Entry) Plan(vars map[string]any) *Plan {
	if e.uncompilable {
		return nil
	}
	var mask uint64
	for i, name := range e.directiveVars {
		v, ok := vars[name]
		if !ok {
			continue // a literal-free @skip(if: $v) without $v fails in collect, not here
		}
		b, isBool := v.(bool)
		if !isBool {
			return nil
		}
		if b {
			mask |= 1 << (2 * i)
		}
		mask |= 1 << (2*i + 1) // present
	}
	e.mu.Lock()
	p, ok := e.plans[mask]
	e.mu.Unlock()
	if ok {
		return p
	}
	p = compile(e.doc, e.op, vars)
	e.mu.Lock()
	e.plans[mask] = p
	e.mu.Unlock()
	return p
}
