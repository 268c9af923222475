package wsproxy

import (
	"sync"
	"time"
)

// outMsg is one frame queued for the client. A text message with typ is
// {"id":<idJSON>,"type":<typ>,"payload":<payload>} (payload shared with the
// other subscribers of an event: read-only); without typ, payload is the
// whole message. Control frames carry their payload.
type outMsg struct {
	op      byte
	idJSON  string
	typ     string
	payload []byte
}

// enqueue queues m for the client; false when the socket is closing, or
// when the queue is full: the client is then dropped as slow (close 1013)
// without waiting for it.
func (c *serverConn) enqueue(m outMsg) bool {
	c.mu.Lock()
	ok := c.enqueueLocked(m)
	c.mu.Unlock()
	if !ok && c.droppedSlow() {
		c.cfg.Observer.SlowConsumerDropped()
	}
	return ok
}

// enqueueEvent queues one event of subscription s, or drops it (true: it is
// not slowness) once s has ended: the fan-out may hand out an event as s
// leaves, and it must never follow the subscription's complete. When the
// writer is idle and nothing waits, the frame is written inline.
func (c *serverConn) enqueueEvent(s *termSub, m outMsg) bool {
	c.mu.Lock()
	if c.subs[s.id] != s {
		c.mu.Unlock()
		return true
	}
	inline := c.inline != nil && !c.flushing && len(c.queue) == 0 && len(c.pending) == 0 && !c.final && !c.done
	if inline {
		c.flushing = true // the writer's role is this call's: enqueueLocked starts no goroutine
	}
	ok := c.enqueueLocked(m)
	c.mu.Unlock()
	if inline {
		c.writeInline()
	}
	if !ok && c.droppedSlow() {
		c.cfg.Observer.SlowConsumerDropped()
	}
	return ok
}

// writeInline writes what is queued (the event just queued) with one
// non-blocking write(2) on the caller's goroutine, the fan-out's. A socket
// whose kernel buffer has room — every socket that keeps up — gets its frame
// without a writer goroutine, a buffer hand-off or a write deadline, which
// cost more than the write itself (docs/benchmarks-log.md "the write floor"). What
// the kernel does not take now (a full buffer, a partial write) is left to
// the writer goroutine, which writes it first, bounded by WriteTimeout as
// every write is; so a slow consumer is still dropped by its queue's bound,
// and the fan-out never waits. The caller holds the writer's role.
func (c *serverConn) writeInline() {
	c.mu.Lock()
	batch := c.queue
	if len(batch) == 0 || c.done || c.final {
		// A close frame was queued meanwhile: the writer goroutine sends it.
		c.flushing = false
		c.startFlushLocked()
		c.mu.Unlock()
		return
	}
	c.queue = nil
	c.queueTaken.Broadcast()
	c.mu.Unlock()

	bp := writeBuffers.Get().(*[]byte)
	buf := (*bp)[:0]
	for i := range batch {
		buf = appendOut(buf, &batch[i])
	}
	n, err := c.inline(buf)
	clear(batch)
	c.mu.Lock()
	if c.queue == nil && cap(batch) <= keptQueue {
		c.queue = batch[:0]
	}
	switch {
	case err != nil:
		c.mu.Unlock()
		c.cfg.Logger.Debug("writing to the client failed: dropping the connection")
		_ = c.raw.Close() // the reader ends and finishes the socket
		c.stopFlushing()
	case n < len(buf):
		c.pending = append([]byte(nil), buf[n:]...)
		go c.flush() // the writer's role passes to it
		c.mu.Unlock()
	default:
		c.flushing = false
		c.startFlushLocked() // what was queued during the write
		c.mu.Unlock()
	}
	*bp = buf
	if cap(buf) <= 64<<10 {
		writeBuffers.Put(bp)
	}
}

// reply queues an answer of the reader's (ack, pong, refusal, close of a
// protocol error): when send_buffer messages already wait, the reader waits
// for the writer to take them instead of dropping the client, so a client
// that floods requests without reading the answers is slowed down, as the
// tunnel slows it.
func (c *serverConn) reply(m outMsg) {
	c.mu.Lock()
	for len(c.queue) >= c.cfg.SendBuffer && !c.final && !c.done {
		c.queueTaken.Wait()
	}
	c.enqueueLocked(m)
	c.mu.Unlock()
}

func (c *serverConn) droppedSlow() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.slowNoted || !c.slow {
		return false
	}
	c.slowNoted = true
	return true
}

func (c *serverConn) enqueueLocked(m outMsg) bool {
	if c.final {
		return false
	}
	// One message per subscription may wait on top of SendBuffer: an event
	// for every subscription of the socket at once is not slowness.
	if len(c.queue) >= c.cfg.SendBuffer+len(c.subs) {
		// What is queued is dropped; only the close frame goes, after the
		// write in progress (bounded by WriteTimeout).
		c.final, c.slow = true, true
		clear(c.queue)
		c.queue = append(c.queue[:0], outMsg{op: opClose, payload: closePayload(closeSlowConsumer, "Too slow: send buffer full")})
		c.startFlushLocked()
		if c.keepTimer != nil {
			c.keepTimer.Stop()
		}
		_ = c.raw.SetReadDeadline(time.Now().Add(c.cfg.WriteTimeout + closeGraceOnFinish))
		return false
	}
	c.queue = append(c.queue, m)
	c.startFlushLocked()
	return true
}

// startFlushLocked starts the writer goroutine unless the writer's role is
// taken.
func (c *serverConn) startFlushLocked() {
	if !c.flushing && (len(c.queue) > 0 || len(c.pending) > 0) {
		c.flushing = true
		go c.flush()
	}
}

// writeBuffers are the writer goroutines' encoding buffers: a socket holds
// one only while it writes.
var writeBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// keptQueue is the largest queue array kept once drained.
const keptQueue = 8

// flush writes the queue until it is empty, then exits.
func (c *serverConn) flush() {
	bp := writeBuffers.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 64<<10 {
			writeBuffers.Put(bp)
		}
	}()
	for {
		c.mu.Lock()
		batch, pending := c.queue, c.pending
		if (len(batch) == 0 && len(pending) == 0) || c.done {
			c.flushing = false
			c.mu.Unlock()
			return
		}
		c.queue, c.pending = nil, nil
		c.queueTaken.Broadcast()
		c.mu.Unlock()

		buf := append((*bp)[:0], pending...) // an inline write's rest goes first
		final := false
		for i := range batch {
			buf = appendOut(buf, &batch[i])
			final = final || batch[i].op == opClose
		}
		*bp = buf
		_ = c.raw.SetWriteDeadline(time.Now().Add(c.cfg.WriteTimeout))
		_, err := c.raw.Write(buf)
		clear(batch)
		c.mu.Lock()
		if c.queue == nil && cap(batch) <= keptQueue {
			c.queue = batch[:0]
		}
		clientClosed := c.clientClosed
		c.mu.Unlock()
		if err != nil {
			c.cfg.Logger.Debug("writing to the client failed: dropping the connection")
			_ = c.raw.Close() // the reader ends and finishes the socket
			c.stopFlushing()
			return
		}
		if final {
			if clientClosed {
				_ = c.raw.Close()
			} else {
				_ = c.raw.SetReadDeadline(time.Now().Add(closeGraceOnFinish))
			}
			c.stopFlushing()
			return
		}
	}
}

func (c *serverConn) stopFlushing() {
	c.mu.Lock()
	c.flushing = false
	c.final = true // nothing more can be written
	c.queue, c.pending = nil, nil
	c.queueTaken.Broadcast()
	c.mu.Unlock()
}

// appendOut appends m as one unmasked frame.
func appendOut(dst []byte, m *outMsg) []byte {
	if m.op != opText || m.typ == "" {
		return appendServerFrame(dst, m.op, m.payload)
	}
	n := len(`{"id":`) + len(m.idJSON) + len(`,"type":"`) + len(m.typ) + len(`"}`)
	if len(m.payload) > 0 {
		n += len(`,"payload":`) + len(m.payload)
	}
	dst = appendFrameHeader(dst, opText, n, nil)
	dst = append(dst, `{"id":`...)
	dst = append(dst, m.idJSON...)
	dst = append(dst, `,"type":"`...)
	dst = append(dst, m.typ...)
	dst = append(dst, '"')
	if len(m.payload) > 0 {
		dst = append(dst, `,"payload":`...)
		dst = append(dst, m.payload...)
	}
	return append(dst, '}')
}
