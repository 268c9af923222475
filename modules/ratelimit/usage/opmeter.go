package usage

import (
	"cmp"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/civicgate/civicgate/internal/boundedlru"
	"github.com/civicgate/civicgate/modules/contract"
)

// Bounds of an OperationMeter (docs/design.md D70).
const (
	// DefaultMaxOperationCells bounds the (key, hour, operation) cells held
	// between flushes: about 75 MB at worst, when every cell is a document
	// of its own (TestOperationMeterMemory measures about 730 bytes a cell
	// with its strings, its per-hour memory and the records queued).
	DefaultMaxOperationCells = 100_000
	// DefaultMaxOperationsPerKey bounds the distinct operations one key
	// has cells for in one hour; beyond it the key's operations that hour
	// are counted under OtherOperation.
	DefaultMaxOperationsPerKey = 1_000
	// DefaultMaxOperationRecords bounds the operations (text and
	// coordinates) queued for civicgate.operations and remembered as
	// written.
	DefaultMaxOperationRecords = 10_000
)

// OtherOperation is the hash, name and type under which a key's operations
// beyond its bound per hour are counted: the totals stay exact, the
// breakdown of the flood is not kept.
const OtherOperation = "other"

// LatencyBuckets is the number of latency buckets of an operation cell:
// bucket 0 counts latencies under 1 ms, bucket i (1…14) those in
// [2^(i-1) ms, 2^i ms), bucket 15 those of 16.384 s or more.
const LatencyBuckets = 16

// Latencies counts requests per latency bucket (LatencyBuckets).
type Latencies [LatencyBuckets]int64

// LatencyBucket is the bucket of a latency d.
func LatencyBucket(d time.Duration) int {
	ms := max(int64(d/time.Millisecond), 0)
	return min(bits.Len64(uint64(ms)), LatencyBuckets-1)
}

// BucketUpperBound is the end of bucket i (exclusive): 2^i ms; the last
// bucket has none and reports its start, 16.384 s.
func BucketUpperBound(i int) time.Duration {
	if i >= LatencyBuckets-1 {
		return time.Duration(1<<(LatencyBuckets-2)) * time.Millisecond
	}
	return time.Duration(1<<i) * time.Millisecond
}

// Percentile is the upper bound of the bucket holding the p-th quantile
// (0 < p ≤ 1) of the counted latencies, 0 when none were counted. The true
// quantile lies in [bound/2, bound) — within a factor of two — except in
// bucket 0 (under 1 ms) and the last bucket (16.384 s or more).
func (l *Latencies) Percentile(p float64) time.Duration {
	var total int64
	for _, n := range l {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := int64(p*float64(total) + 0.999999) // ceil, without float noise
	rank = min(max(rank, 1), total)
	var seen int64
	for i, n := range l {
		seen += n
		if seen >= rank {
			return BucketUpperBound(i)
		}
	}
	return BucketUpperBound(LatencyBuckets - 1)
}

// Plus adds o to l bucket by bucket.
func (l *Latencies) Plus(o *Latencies) {
	for i := range l {
		l[i] += o[i]
	}
}

// OperationSample is one admitted GraphQL operation of a key, as
// civic_rate_limit saw it after the handler chain answered. It carries no
// variables and no credential: the operation is named by its document hash.
type OperationSample struct {
	KeyID string
	// Org names the key's organization, read only for a new cell.
	Org OrgSource
	At  time.Time
	// Operation is what the guard admitted; its Shape (nil until the guard
	// computes one) is recorded once per hash.
	Operation *contract.GraphQLOperation
	Error     bool // answered 4xx or 5xx (the HTTP status only)
	// ErrorOnly counts one error of a request already counted (a
	// subscription the upstream ended with an error, docs/design.md D83):
	// no request, cost or latency.
	ErrorOnly bool
	Cost      int64
	Latency   time.Duration
}

// OperationRow is the count of one operation of one key in one UTC hour.
type OperationRow struct {
	KeyID    string
	OrgID    string
	Start    time.Time // the hour, UTC
	Hash     string
	Type     string
	Name     string
	Requests int64
	Errors   int64
	Cost     int64
	Latency  Latencies
	LastSeen time.Time
}

// OperationRecord is one operation's text and coordinates, for
// civicgate.operations and civicgate.operation_coordinates; Normalized and
// Coordinates are empty when the guard computed no shape. Deprecated and
// DeprecationReasons are the shape's (docs/design.md D77): the reason of
// Deprecated[i] is DeprecationReasons[i], "" when it has none.
type OperationRecord struct {
	Hash               string
	Type               string
	Name               string
	Normalized         string
	Coordinates        []string
	Deprecated         []string
	DeprecationReasons []string
	Seen               time.Time
}

// setShape takes shape's text, coordinates and deprecations; they are
// shared and read-only (contract.OperationShape): kept, not copied.
func (r *OperationRecord) setShape(shape *contract.OperationShape) {
	r.Normalized, r.Coordinates = shape.Normalized, shape.Coordinates
	r.Deprecated, r.DeprecationReasons = shape.Deprecated, shape.DeprecationReasons
}

type opCellKey struct {
	key  string
	hour int64 // Unix seconds / 3600, floored
	hash string
}

type keyHour struct {
	key  string
	hour int64
}

type opCell struct {
	org, typ, name string
	requests       int64
	errors         int64
	cost           int64
	lastSeen       int64 // Unix microseconds
	latency        Latencies
}

type opShard struct {
	mu    sync.Mutex
	cells map[opCellKey]*opCell
	// seen are the operations with a cell of their own this hour or the
	// last, kept across drains; perKey counts them per key and hour.
	seen   map[opCellKey]struct{}
	perKey map[keyHour]int32
	_      [64 - 32]byte
}

// writtenOp is what the meter last queued for an operation record: its
// hour, whether it had a shape, and the shape's deprecations (shared with
// the compiled document), so that a schema reload changing them queues the
// record again within the hour (docs/design.md D77).
type writtenOp struct {
	hour       int64
	shaped     bool
	deprecated []string
	reasons    []string
}

// sameDeprecations reports whether shape deprecates what w recorded, for
// the same reasons.
func (w writtenOp) sameDeprecations(shape *contract.OperationShape) bool {
	return shape == nil || (slices.Equal(w.deprecated, shape.Deprecated) && slices.Equal(w.reasons, shape.DeprecationReasons))
}

// OperationMeter holds per (key, UTC hour, document hash) counts not yet
// flushed, sharded by key id like Meter, and the operation records not yet
// written. The zero value is not usable: use NewOperationMeter.
type OperationMeter struct {
	seed      uint64
	max       int64
	maxPerKey int32
	_         [64 - 20]byte
	shards    [shardCount]opShard
	held      atomic.Int64 // cells
	seenHeld  atomic.Int64 // entries of the shards' seen
	dropped   atomic.Int64 // samples not counted: no room even under other
	folded    atomic.Int64 // samples counted under other

	recMu      sync.Mutex
	maxRecords int
	pending    map[string]*OperationRecord
	written    *boundedlru.LRU[string, writtenOp]
}

// NewOperationMeter returns a meter holding at most maxCells cells and
// maxPerKey distinct operations per key and hour (defaults when ≤ 0).
func NewOperationMeter(maxCells, maxPerKey int) *OperationMeter {
	maxCells = cmp.Or(max(maxCells, 0), DefaultMaxOperationCells)
	maxPerKey = cmp.Or(max(maxPerKey, 0), DefaultMaxOperationsPerKey)
	m := &OperationMeter{
		seed: uint64(time.Now().UnixNano()) | 1, max: int64(maxCells), maxPerKey: int32(min(maxPerKey, 1<<30)),
		maxRecords: DefaultMaxOperationRecords, pending: make(map[string]*OperationRecord),
		written: boundedlru.New[string, writtenOp](boundedlru.Options[string, writtenOp]{MaxLen: DefaultMaxOperationRecords}),
	}
	for i := range m.shards {
		m.shards[i].cells = make(map[opCellKey]*opCell)
		m.shards[i].perKey = make(map[keyHour]int32)
		m.shards[i].seen = make(map[opCellKey]struct{})
	}
	return m
}

func hourOf(at time.Time) int64 {
	s := at.Unix()
	q := s / 3600
	if s%3600 < 0 {
		q--
	}
	return q
}

// shardOf hashes the key id (FNV-1a, no allocation) to a shard.
func (m *OperationMeter) shardOf(keyID string) *opShard {
	h := m.seed
	for i := 0; i < len(keyID); i++ {
		h ^= uint64(keyID[i])
		h *= 1099511628211
	}
	return &m.shards[h&(shardCount-1)]
}

// Add counts s. It does not allocate when the (key, hour, hash) cell exists.
// A key's operations beyond the per-key bound in an hour, or beyond the
// meter's bound, are counted under OtherOperation; a sample for which not
// even that cell fits is dropped and counted (Dropped).
func (m *OperationMeter) Add(s *OperationSample) {
	op := s.Operation
	if op == nil || op.DocumentHash == "" {
		return
	}
	hour := hourOf(s.At)
	sh := m.shardOf(s.KeyID)
	sh.mu.Lock()
	c := sh.cells[opCellKey{key: s.KeyID, hour: hour, hash: op.DocumentHash}]
	if c == nil {
		c = m.newCell(sh, s, hour)
		if c == nil {
			sh.mu.Unlock()
			m.dropped.Add(1)
			return
		}
	}
	if s.ErrorOnly {
		c.errors++
		sh.mu.Unlock()
		return
	}
	c.requests++
	if s.Error {
		c.errors++
	}
	c.cost += s.Cost
	c.latency[LatencyBucket(s.Latency)]++
	if at := s.At.UnixMicro(); at > c.lastSeen {
		c.lastSeen = at
	}
	sh.mu.Unlock()
}

// newCell makes the cell s counts in, under sh's lock: its own, or its
// key's other cell when a bound is reached; nil when nothing fits. A key's
// distinct operations are remembered for its hour across drains (seen), so
// the per-key bound holds per hour, not per flush.
func (m *OperationMeter) newCell(sh *opShard, s *OperationSample, hour int64) *opCell {
	op := s.Operation
	if _, known := sh.seen[opCellKey{key: s.KeyID, hour: hour, hash: op.DocumentHash}]; !known {
		kh := keyHour{key: s.KeyID, hour: hour}
		n := sh.perKey[kh]
		if n >= m.maxPerKey || m.seenHeld.Load() >= m.max {
			return m.otherCell(sh, s, hour)
		}
		// Clone: the caller's strings may alias a request buffer.
		kh.key = strings.Clone(s.KeyID)
		sh.seen[opCellKey{key: kh.key, hour: hour, hash: strings.Clone(op.DocumentHash)}] = struct{}{}
		sh.perKey[kh] = n + 1
		m.seenHeld.Add(1)
	}
	if m.held.Add(1) > m.max {
		m.held.Add(-1)
		return m.otherCell(sh, s, hour)
	}
	c := &opCell{org: orgOf(s.Org), typ: operationType(op.Type), name: strings.Clone(op.Name)}
	k := opCellKey{key: strings.Clone(s.KeyID), hour: hour, hash: strings.Clone(op.DocumentHash)}
	sh.cells[k] = c
	m.note(k.hash, c.typ, c.name, op.Shape, hour, s.At)
	return c
}

// otherCell is the key's OtherOperation cell of the hour, made if there is
// room; nil when there is none.
func (m *OperationMeter) otherCell(sh *opShard, s *OperationSample, hour int64) *opCell {
	if c := sh.cells[opCellKey{key: s.KeyID, hour: hour, hash: OtherOperation}]; c != nil {
		m.folded.Add(1)
		return c
	}
	if m.held.Add(1) > m.max {
		m.held.Add(-1)
		return nil
	}
	c := &opCell{org: orgOf(s.Org), typ: OtherOperation, name: OtherOperation}
	sh.cells[opCellKey{key: strings.Clone(s.KeyID), hour: hour, hash: OtherOperation}] = c
	m.folded.Add(1)
	return c
}

func orgOf(src OrgSource) string {
	if src == nil {
		return ""
	}
	return strings.Clone(src.Org())
}

// operationType returns the constant spelling of a GraphQL operation type,
// so a cell does not hold a copy of it.
func operationType(t string) string {
	switch t {
	case "query":
		return "query"
	case "mutation":
		return "mutation"
	case "subscription":
		return "subscription"
	}
	return strings.Clone(t)
}

// note queues the operation's record unless this meter queued it this hour
// already (with its shape, when it has one): civicgate.operations is
// written once per hash and its last_seen moved at most hourly.
func (m *OperationMeter) note(hash, typ, name string, shape *contract.OperationShape, hour int64, at time.Time) {
	m.recMu.Lock()
	defer m.recMu.Unlock()
	if w, ok := m.written.Get(hash); ok && w.hour == hour && (w.shaped || shape == nil) && w.sameDeprecations(shape) {
		return
	}
	w := writtenOp{hour: hour, shaped: shape != nil}
	if shape != nil {
		w.deprecated, w.reasons = shape.Deprecated, shape.DeprecationReasons
	}
	if p := m.pending[hash]; p != nil {
		// the latest shape's deprecations win: they are the schema now
		if shape != nil && (p.Normalized == "" || !w.sameDeprecationsOf(p)) {
			p.setShape(shape)
			m.written.Put(hash, w)
		}
		return
	}
	if len(m.pending) >= m.maxRecords {
		return // the next hour's first cell of this hash queues it again
	}
	rec := &OperationRecord{Hash: hash, Type: typ, Name: name, Seen: at}
	if shape != nil {
		rec.setShape(shape)
	}
	m.pending[hash] = rec
	m.written.Put(hash, w)
}

// sameDeprecationsOf reports whether w's deprecations are those of the
// queued record p.
func (w writtenOp) sameDeprecationsOf(p *OperationRecord) bool {
	return slices.Equal(w.deprecated, p.Deprecated) && slices.Equal(w.reasons, p.DeprecationReasons)
}

// Drain takes every count and queued record held so far and leaves the
// meter empty; an Add running meanwhile lands in this drain or the next.
func (m *OperationMeter) Drain() ([]OperationRow, []OperationRecord) {
	var rows []OperationRow
	stale := hourOf(time.Now()) - 1 // seen entries of earlier hours are forgotten
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		for k := range sh.seen {
			if k.hour < stale {
				delete(sh.seen, k)
				m.seenHeld.Add(-1)
			}
		}
		for k := range sh.perKey {
			if k.hour < stale {
				delete(sh.perKey, k)
			}
		}
		old := sh.cells
		if len(old) == 0 {
			sh.mu.Unlock()
			continue
		}
		sh.cells = make(map[opCellKey]*opCell, len(old))
		m.held.Add(-int64(len(old)))
		sh.mu.Unlock()
		for k, c := range old {
			rows = append(rows, OperationRow{
				KeyID: k.key, OrgID: c.org, Start: time.Unix(k.hour*3600, 0).UTC(), Hash: k.hash, Type: c.typ, Name: c.name,
				Requests: c.requests, Errors: c.errors, Cost: c.cost, Latency: c.latency, LastSeen: time.UnixMicro(c.lastSeen).UTC(),
			})
		}
	}
	m.recMu.Lock()
	pending := m.pending
	m.pending = make(map[string]*OperationRecord)
	m.recMu.Unlock()
	recs := make([]OperationRecord, 0, len(pending))
	for _, r := range pending {
		recs = append(recs, *r)
	}
	return rows, recs
}

// Dropped is how many samples found no room, not even under OtherOperation.
func (m *OperationMeter) Dropped() int64 { return m.dropped.Load() }

// Folded is how many samples were counted under OtherOperation.
func (m *OperationMeter) Folded() int64 { return m.folded.Load() }

// Cells is how many cells the meter holds now.
func (m *OperationMeter) Cells() int { return int(m.held.Load()) }
