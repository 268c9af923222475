package wsproxy

import (
	"context"
	"net"
	"testing"
	"time"
)

// discardConn is a client connection that takes every write; the
// benchmark measures the filter, not a network.
type discardConn struct{ net.Conn }

func (discardConn) Write(p []byte) (int, error)      { return len(p), nil }
func (discardConn) Read([]byte) (int, error)         { select {} }
func (discardConn) Close() error                     { return nil }
func (discardConn) SetReadDeadline(time.Time) error  { return nil }
func (discardConn) SetWriteDeadline(time.Time) error { return nil }

// BenchmarkForwardNext: upstream-to-client throughput of gqlgen-shaped
// next messages through the filter (frame tracking and the type scan).
func BenchmarkForwardNext(b *testing.B) {
	fc := newFilterConn(context.Background(), discardConn{}, nil, Config{InitTimeout: time.Hour})
	defer fc.Close()
	msg := appendServerFrame(nil, opText, []byte(`{"id":"1","type":"next","payload":{"data":{"ticks":{"id":"42","type":"complete","at":"2025-01-01T00:00:00Z"}}}}`))
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fc.Write(msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkForwardNextPayloadFirst is the same with the payload before the
// type, which makes the scan skip the whole payload.
func BenchmarkForwardNextPayloadFirst(b *testing.B) {
	fc := newFilterConn(context.Background(), discardConn{}, nil, Config{InitTimeout: time.Hour})
	defer fc.Close()
	msg := appendServerFrame(nil, opText, []byte(`{"payload":{"data":{"ticks":{"id":"42","type":"complete","at":"2025-01-01T00:00:00Z","s":"a\"}b"}}},"id":"1","type":"next"}`))
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fc.Write(msg); err != nil {
			b.Fatal(err)
		}
	}
}
