package wsproxy

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// errWriteTimeout: a frame of the filter's own could not be written to the
// client within Config.WriteTimeout (the upstream stalled inside a message
// or the client stopped reading).
var errWriteTimeout = errors.New("wsproxy: timed out writing to the client")

// errClientClosed: a close frame was already sent to the client.
var errClientClosed = errors.New("wsproxy: close frame already sent to the client")

// clientWriter serialises the two sources of bytes to the client: the
// upstream's stream as reverse_proxy copies it (Write) and the frames the
// filter injects (error messages, close frames), which go out only between
// two whole upstream messages. One writer at a time holds busy; the mutex
// is never held across a network write.
type clientWriter struct {
	raw     net.Conn
	timeout time.Duration
	ended   func(typ, id []byte)

	mu       sync.Mutex
	cond     sync.Cond
	busy     bool
	upstream upstreamFrames // read and written only by the holder of busy
	pending  []byte         // injected frames waiting for a boundary
	queued   uint64         // injections queued so far
	written  uint64         // injections written so far
	final    bool           // a close frame is queued: nothing after it
	sentAll  bool           // the close frame was written
	err      error          // first write error

	hasPending atomic.Bool
}

func newClientWriter(raw net.Conn, timeout time.Duration, ended func(typ, id []byte)) *clientWriter {
	w := &clientWriter{raw: raw, timeout: timeout, ended: ended}
	w.cond.L = &w.mu
	return w
}

// acquire waits until no one else writes and takes busy; it reports false
// once the stream to the client is over (close frame sent or write error).
func (w *clientWriter) acquire() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.busy {
		w.cond.Wait()
	}
	if w.sentAll || w.err != nil {
		return false
	}
	w.busy = true
	return true
}

func (w *clientWriter) release() {
	w.mu.Lock()
	w.busy = false
	w.cond.Broadcast()
	w.mu.Unlock()
}

// Write forwards the upstream's bytes p, injecting pending frames at each
// boundary between messages. After the filter's close frame, the
// upstream's bytes are dropped.
func (w *clientWriter) Write(p []byte) (int, error) {
	if !w.acquire() {
		w.mu.Lock()
		err := w.err
		w.mu.Unlock()
		return len(p), err
	}
	defer w.release()
	if w.hasPending.Load() && w.upstream.between() {
		if done, err := w.drain(); done || err != nil {
			return len(p), err
		}
	}
	for off := 0; off < len(p); {
		n, atBoundary := w.upstream.advance(p[off:], w.ended)
		if _, err := w.raw.Write(p[off : off+n]); err != nil {
			w.fail(err)
			return off, fmt.Errorf("wsproxy: writing to the client: %w", err)
		}
		off += n
		if atBoundary && w.hasPending.Load() {
			if done, err := w.drain(); done || err != nil {
				return len(p), err
			}
		}
	}
	return len(p), nil
}

// drain writes the pending frames; the caller holds busy. done reports
// that the close frame went out (nothing may follow).
func (w *clientWriter) drain() (done bool, err error) {
	w.mu.Lock()
	frames, upTo, final := w.pending, w.queued, w.final
	w.pending = nil
	w.hasPending.Store(false)
	w.mu.Unlock()
	if len(frames) == 0 {
		return false, nil
	}
	_, err = w.raw.Write(frames)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.failLocked(err)
		return true, fmt.Errorf("wsproxy: writing to the client: %w", err)
	}
	w.written = upTo
	w.sentAll = final
	w.cond.Broadcast()
	return final, nil
}

func (w *clientWriter) fail(err error) {
	w.mu.Lock()
	w.failLocked(err)
	w.mu.Unlock()
}

func (w *clientWriter) failLocked(err error) {
	if w.err == nil {
		w.err = err
	}
	w.cond.Broadcast()
}

// inject queues frame and waits until it is written, at most the write
// timeout; final marks a close frame, after which nothing is written.
func (w *clientWriter) inject(frame []byte, final bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.final {
		return errClientClosed
	}
	w.pending = append(w.pending, frame...)
	w.queued++
	mine := w.queued
	w.final = final
	w.hasPending.Store(true)
	var (
		timer   *time.Timer
		expired bool
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for w.written < mine {
		if w.err != nil {
			return w.err
		}
		if expired {
			return errWriteTimeout
		}
		if !w.busy && w.upstream.between() {
			w.busy = true
			w.mu.Unlock()
			_ = w.raw.SetWriteDeadline(time.Now().Add(w.timeout))
			_, err := w.drain()
			_ = w.raw.SetWriteDeadline(time.Time{})
			w.mu.Lock()
			w.busy = false
			w.cond.Broadcast()
			if err != nil {
				return err
			}
			continue
		}
		if timer == nil {
			timer = time.AfterFunc(w.timeout, func() {
				w.mu.Lock()
				expired = true
				w.cond.Broadcast()
				w.mu.Unlock()
			})
		}
		w.cond.Wait()
	}
	return nil
}
