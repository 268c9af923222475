package gqlcache

import (
	"crypto/sha256"
	"encoding/binary"
	"strings"
	"sync"
)

// tagList is an entry's tags known when its request starts: the static tags
// of the handler, or else the families of the operation the guard admitted
// (contract.GraphQLOperation.Families); or a change event's comma-separated
// families. It is walked without allocating.
type tagList struct {
	list []string
	csv  string
}

// each yields every non-empty tag.
func (l tagList) each(yield func(string) bool) {
	if l.list != nil {
		for _, t := range l.list {
			if !yield(t) {
				return
			}
		}
		return
	}
	rest := l.csv
	for rest != "" {
		t, after, _ := strings.Cut(rest, ",")
		rest = after
		if t = strings.TrimSpace(t); t != "" && !yield(t) {
			return
		}
	}
}

// appendField appends s, length-prefixed, so that no two sequences of
// fields have the same material.
func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytesField(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendSentField appends a member as sent: absent (nil) and empty are
// told apart.
func appendSentField(b, s []byte) []byte {
	if s == nil {
		return append(b, 0)
	}
	return appendBytesField(append(b, 1), s)
}

func appendUint(b []byte, n uint64) []byte { return binary.AppendUvarint(b, n) }

// sumKey is the key of the material in b.
func sumKey(b []byte) cacheKey { return sha256.Sum256(b) }

// buffers are the scratch buffers of key material and request bodies.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func getBuffer() *[]byte { return buffers.Get().(*[]byte) }

func putBuffer(b *[]byte) {
	if cap(*b) > 1<<20 {
		return // an outsized one is left to the collector
	}
	*b = (*b)[:0]
	buffers.Put(b)
}
