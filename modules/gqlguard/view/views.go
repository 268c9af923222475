package view

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"strings"
	"sync"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/civicgate/civicgate/modules/gqlguard/analysis"
	"github.com/civicgate/civicgate/modules/gqlguard/document"
	"github.com/civicgate/civicgate/modules/gqlguard/introspect"
)

// MaxFamilies is the most families a route with schema views may configure:
// a set of owned families is a bit mask of them.
const MaxFamilies = 64

// ErrTooManyFamilies refuses a configuration over MaxFamilies.
var ErrTooManyFamilies = errors.New("schema_view entitled supports at most 64 families")

// Compiled is one view with its compiler. Its schema's hash differs from
// every other view's, so the document cache, keyed by schema hash, never
// hands a document compiled for one view to a caller of another.
type Compiled struct {
	Schema   *document.Schema
	Compiler *document.Compiler
	// Full: the view is the whole schema (the caller owns every root field).
	Full bool
	// Introspection answers __schema and __type from the view (nil when
	// Full: the backend answers them from the whole schema; docs/design.md
	// D68).
	Introspection *introspect.Schema
}

// Views builds and keeps the view of each set of owned families, once per
// set per schema load (a reload provisions new Views): at most one per
// distinct set, never per request.
type Views struct {
	schema   *document.Schema
	families analysis.Families
	index    map[string]uint // family name → bit
	roots    int             // root fields of the schema (introspection's aside)
	compile  func(*document.Schema) *document.Compiler

	mu     sync.RWMutex
	byMask map[uint64]*Compiled
}

// NewViews prepares the views of s for the configured families; compile
// returns the compiler of one view's schema.
func NewViews(s *document.Schema, families analysis.Families, compile func(*document.Schema) *document.Compiler) (*Views, error) {
	names := families.Names()
	if len(names) > MaxFamilies {
		return nil, ErrTooManyFamilies
	}
	v := &Views{schema: s, families: families, index: map[string]uint{}, compile: compile, byMask: map[uint64]*Compiled{}}
	for i, n := range names {
		v.index[n] = uint(i)
	}
	for _, def := range []*ast.Definition{s.AST.Query, s.AST.Mutation, s.AST.Subscription} {
		if def == nil {
			continue
		}
		for _, f := range def.Fields {
			if !strings.HasPrefix(f.Name, "__") {
				v.roots++
			}
		}
	}
	return v, nil
}

// For returns the view of a caller owning the comma-separated families
// owned (names not configured are ignored). It allocates nothing once the
// view of that set is built.
func (v *Views) For(owned string) *Compiled {
	var mask uint64
	for owned != "" {
		var part string
		part, owned, _ = strings.Cut(owned, ",")
		if bit, ok := v.index[strings.TrimSpace(part)]; ok {
			mask |= 1 << bit
		}
	}
	v.mu.RLock()
	c := v.byMask[mask]
	v.mu.RUnlock()
	if c != nil {
		return c
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if c = v.byMask[mask]; c == nil {
		c = v.build(mask)
		v.byMask[mask] = c
	}
	return c
}

// Len is the number of views built.
func (v *Views) Len() int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return len(v.byMask)
}

func (v *Views) build(mask uint64) *Compiled {
	roots := v.families.Roots(v.schema.AST, func(fam string) bool { return mask&(1<<v.index[fam]) != 0 })
	n := 0
	for _, fields := range roots {
		n += len(fields)
	}
	if n == v.roots {
		return &Compiled{Schema: v.schema, Compiler: v.compile(v.schema), Full: true}
	}
	var buf [16]byte
	binary.LittleEndian.PutUint64(buf[:8], v.schema.Hash)
	binary.LittleEndian.PutUint64(buf[8:], mask)
	sum := sha256.Sum256(buf[:])
	s := &document.Schema{AST: Build(v.schema.AST, roots), Hash: binary.LittleEndian.Uint64(sum[:8])}
	return &Compiled{Schema: s, Compiler: v.compile(s), Introspection: introspect.New(s.AST)}
}

// Whole reports whether the caller sees the whole schema: a nil view (no
// schema views, or entitlements not checked) or a full one.
func (c *Compiled) Whole() bool { return c == nil || c.Full }
