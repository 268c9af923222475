package store

import (
	"encoding/json"
	"hash/maphash"
	"sync/atomic"

	"github.com/civicgate/civicgate/backend/records"
)

// decodableActivities remembers activities JSON that decoded, by a seeded 64-bit hash of its bytes, so a
// lobbying page does not decode the same disclosure's activities again on every read (docs/design.md D58).
// The projected read checks every row's activities even when none are selected: the reference executor scans
// them, and a page it cannot scan must be its to answer. That decoding was a quarter of recordsd's CPU on a
// lobbying page. Only successes are remembered, in a fixed array of slots indexed by the hash (a newer hash
// overwrites an older one); a miss decodes, so the answer is always encoding/json's. The seed is made per
// process and never leaves it, so no input can be crafted to collide with a remembered one.
var decodableActivities = newHashSet(1 << 15)

type hashSet struct {
	seed  maphash.Seed
	slots []atomic.Uint64
}

func newHashSet(n int) *hashSet {
	return &hashSet{seed: maphash.MakeSeed(), slots: make([]atomic.Uint64, n)}
}

func (s *hashSet) key(b []byte) uint64 {
	h := maphash.Bytes(s.seed, b)
	if h == 0 {
		h = 1 // 0 marks an empty slot
	}
	return h
}

func (s *hashSet) has(h uint64) bool { return s.slots[h%uint64(len(s.slots))].Load() == h }
func (s *hashSet) add(h uint64)      { s.slots[h%uint64(len(s.slots))].Store(h) }

// activitiesDecode reports whether raw decodes as pgx decodes the column for LobbyingDisclosures
// (encoding/json into []records.LobbyingActivity).
func activitiesDecode(raw []byte) bool {
	h := decodableActivities.key(raw)
	if decodableActivities.has(h) {
		return true
	}
	var activities []records.LobbyingActivity
	if json.Unmarshal(raw, &activities) != nil {
		return false
	}
	decodableActivities.add(h)
	return true
}
