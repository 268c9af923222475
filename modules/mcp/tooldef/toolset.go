package tooldef

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxFamilies bounds the families that hold tools: a caller's families are
// a 64-bit set.
const maxFamilies = 64

// maxMemo bounds the lists For keeps: one per distinct set of families
// asked for (in practice one per tier).
const maxMemo = 256

// ToolSet is the tools of one manifest. It is immutable once loaded and safe
// for concurrent use.
type ToolSet struct {
	tools    []*Tool
	byName   map[string]*Tool
	families []string          // families holding a tool, sorted
	bit      map[string]uint64 // family → its bit

	memo   atomic.Pointer[map[uint64][]*mcp.Tool] // copy on write
	memoMu sync.Mutex
}

func newToolSet(tools []*Tool) (*ToolSet, error) {
	s := &ToolSet{tools: tools, byName: make(map[string]*Tool, len(tools)), bit: map[string]uint64{}}
	for _, t := range tools {
		s.byName[t.Name] = t
		if !slices.Contains(s.families, t.Family) {
			s.families = append(s.families, t.Family)
		}
	}
	if len(s.families) > maxFamilies {
		return nil, fmt.Errorf("tooldef: tools in %d families, over the bound of %d", len(s.families), maxFamilies)
	}
	slices.Sort(s.families)
	for i, f := range s.families {
		s.bit[f] = 1 << i
	}
	s.memo.Store(&map[uint64][]*mcp.Tool{})
	return s, nil
}

// Tools returns every tool, in manifest order. Shared: never modify it.
func (s *ToolSet) Tools() []*Tool { return s.tools }

// Lookup returns the tool named name.
func (s *ToolSet) Lookup(name string) (*Tool, bool) {
	t, ok := s.byName[name]
	return t, ok
}

// Families returns the families that hold at least one tool, sorted.
func (s *ToolSet) Families() []string { return s.families }

// For returns the MCP tools a caller owning the comma-separated families
// owned may call (what {civic.families} holds), in manifest order: what
// tools/list answers. Unknown family names are ignored. The list of each
// distinct set of families is built once and shared — never modify it — so
// a repeated call allocates nothing.
func (s *ToolSet) For(owned string) []*mcp.Tool {
	var mask uint64
	for owned != "" {
		var name string
		name, owned, _ = strings.Cut(owned, ",")
		mask |= s.bit[strings.TrimSpace(name)]
	}
	if list, ok := (*s.memo.Load())[mask]; ok {
		return list
	}
	list := make([]*mcp.Tool, 0, len(s.tools))
	for _, t := range s.tools {
		if mask&s.bit[t.Family] != 0 {
			list = append(list, t.MCP)
		}
	}
	s.memoMu.Lock()
	defer s.memoMu.Unlock()
	old := *s.memo.Load()
	if prev, ok := old[mask]; ok {
		return prev
	}
	if len(old) < maxMemo {
		next := make(map[uint64][]*mcp.Tool, len(old)+1)
		for k, v := range old {
			next[k] = v
		}
		next[mask] = list
		s.memo.Store(&next)
	}
	return list
}
