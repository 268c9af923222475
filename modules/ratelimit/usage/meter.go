// Package usage counts requests per API key and minute, and GraphQL
// operations per key and hour (OperationMeter, docs/design.md D70), in memory
// and flushes the counts to PostgreSQL (civicgate.usage_minute,
// civicgate.usage_hour, civicgate.usage_operation_hour) with additive upserts,
// so several gateways can write the same rows. It is a plain library:
// civic_rate_limit calls Meter.Add and OperationMeter.Add per request and runs
// a Flusher; `civicgate keys usage` reads the tables with Query, `civicgate
// usage` with Operations, FieldsOf, CoordinateUsers and Unused. See README.md.
package usage

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxCells is the bound NewMeter uses when given maxKeys <= 0: about
// 15 MB of cells (key id, organization id, counters and map overhead).
const DefaultMaxCells = 100_000

// shardCount is a power of two so a hash picks a shard with a mask.
const shardCount = 64

// Delta is one request's contribution (or a sum of them).
type Delta struct {
	Admitted     int64 // requests let through by the rate limiter
	Refused      int64 // requests refused with 429
	ClientErrors int64 // admitted requests answered 4xx
	ServerErrors int64 // admitted requests answered 5xx
	Cost         int64 // cost points spent
	MCP          int64 // requests of the above made for an MCP tool call (contract.TransportMCP)
}

// Plus returns d + o, field by field.
func (d Delta) Plus(o Delta) Delta {
	return Delta{
		Admitted:     d.Admitted + o.Admitted,
		Refused:      d.Refused + o.Refused,
		ClientErrors: d.ClientErrors + o.ClientErrors,
		ServerErrors: d.ServerErrors + o.ServerErrors,
		Cost:         d.Cost + o.Cost,
		MCP:          d.MCP + o.MCP,
	}
}

// Row is the count of one key in one bucket (a minute, or an hour as Query
// returns hour rows) starting at Start (UTC).
type Row struct {
	KeyID string
	OrgID string
	Start time.Time
	Delta
}

// Sum adds up the rows' counts.
func Sum(rows []Row) Delta {
	var t Delta
	for _, r := range rows {
		t = t.Plus(r.Delta)
	}
	return t
}

// cellKey names one (key, minute) cell; minute is Unix seconds / 60, floored.
type cellKey struct {
	key    string
	minute int64
}

type cell struct {
	org string
	Delta
}

// shard is one lock and its cells, padded to its own cache line so that
// goroutines adding to different shards do not contend on the line.
type shard struct {
	mu    sync.Mutex
	cells map[cellKey]*cell
	_     [64 - 16]byte
}

// Meter holds the counts not yet flushed, sharded by key id. It holds at most
// max distinct (key, minute) cells; an Add that would create one more is
// dropped and counted (Dropped). The zero Meter is not usable: use NewMeter.
type Meter struct {
	seed    maphash.Seed // read on every Add: kept off the shards' lines
	max     int64
	_       [64 - 16]byte
	shards  [shardCount]shard
	held    atomic.Int64 // cells held across shards
	dropped atomic.Int64
}

// NewMeter returns a Meter holding at most maxKeys distinct (key, minute)
// cells (DefaultMaxCells when maxKeys <= 0).
func NewMeter(maxKeys int) *Meter {
	if maxKeys <= 0 {
		maxKeys = DefaultMaxCells
	}
	m := &Meter{seed: maphash.MakeSeed(), max: int64(maxKeys)}
	for i := range m.shards {
		m.shards[i].cells = make(map[cellKey]*cell)
	}
	return m
}

// minuteOf is at's UTC minute as Unix seconds / 60, floored.
func minuteOf(at time.Time) int64 {
	s := at.Unix()
	q := s / 60
	if s%60 < 0 {
		q--
	}
	return q
}

func (m *Meter) shard(keyID string) *shard {
	return &m.shards[maphash.String(m.seed, keyID)&(shardCount-1)]
}

// Add counts d for keyID (of organization orgID) in the UTC minute of at. It
// does not allocate when the (key, minute) cell exists; a new cell beyond the
// Meter's bound is not created and the Add is counted in Dropped instead. The
// organization of a cell is the one its first Add named.
func (m *Meter) Add(keyID, orgID string, at time.Time, d Delta) {
	m.add(keyID, orgID, nil, minuteOf(at), d)
}

// OrgSource names a key's organization when the Meter needs it: only for a
// new (key, minute) cell, so a hot path need not look it up per request.
type OrgSource interface{ Org() string }

// AddFrom is Add with the organization read from org only if the cell is new.
func (m *Meter) AddFrom(keyID string, org OrgSource, at time.Time, d Delta) {
	m.add(keyID, "", org, minuteOf(at), d)
}

func (m *Meter) add(keyID, orgID string, orgSrc OrgSource, minute int64, d Delta) {
	k := cellKey{key: keyID, minute: minute}
	s := m.shard(keyID)
	s.mu.Lock()
	c := s.cells[k]
	if c == nil {
		if m.held.Add(1) > m.max {
			m.held.Add(-1)
			s.mu.Unlock()
			m.dropped.Add(1)
			return
		}
		// Clone: the caller's strings may point into a larger buffer (a
		// request) that the cell must not keep alive.
		k.key = strings.Clone(keyID)
		if orgSrc != nil {
			orgID = orgSrc.Org()
		}
		c = &cell{org: strings.Clone(orgID)}
		s.cells[k] = c
	}
	c.Admitted += d.Admitted
	c.Refused += d.Refused
	c.ClientErrors += d.ClientErrors
	c.ServerErrors += d.ServerErrors
	c.Cost += d.Cost
	c.MCP += d.MCP
	s.mu.Unlock()
}

// Drain takes every count held so far, in no particular order, and leaves the
// Meter empty. Adds running meanwhile land either in the rows returned or in
// the next Drain, never in both and never nowhere.
func (m *Meter) Drain() []Row {
	var rows []Row
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		old := s.cells
		if len(old) == 0 {
			s.mu.Unlock()
			continue
		}
		s.cells = make(map[cellKey]*cell, len(old))
		m.held.Add(-int64(len(old)))
		s.mu.Unlock()
		for k, c := range old {
			rows = append(rows, Row{KeyID: k.key, OrgID: c.org, Start: time.Unix(k.minute*60, 0).UTC(), Delta: c.Delta})
		}
	}
	return rows
}

// Dropped is how many Adds found the Meter full since it was made.
func (m *Meter) Dropped() int64 { return m.dropped.Load() }

// Cells is how many (key, minute) cells the Meter holds now.
func (m *Meter) Cells() int { return int(m.held.Load()) }
