package mcp

import (
	"net/http"
	"time"
)

// The standalone event stream (GET) of a session lasts as long as the
// client holds it, longer than the server's write timeout (60 s in
// caddyfile/servers.caddy), and carries what the server says unprompted
// (notifications/tools/list_changed). The SDK keeps no queue for it
// (without an EventStore a message for a stream no GET holds is dropped)
// and writes each event straight to the connection under the stream's
// lock, so a client that stops reading blocks that session's next
// notification in Write, never memory. streamWriter bounds that wait: each
// write gets its own deadline, so a stalled reader fails the write after
// streamWriteTimeout and the stream is done.

// streamWriteTimeout is how long one event may take to reach the client.
const streamWriteTimeout = 30 * time.Second

// streamWriter gives each write of a GET stream its own deadline.
type streamWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func newStreamWriter(w http.ResponseWriter) *streamWriter {
	return &streamWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: streamWriteTimeout}
}

func (s *streamWriter) Write(p []byte) (int, error) {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	return s.ResponseWriter.Write(p)
}

// FlushError flushes under the deadline of the last write.
func (s *streamWriter) FlushError() error { return s.rc.Flush() }

// Unwrap lets http.ResponseController reach the connection.
func (s *streamWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
