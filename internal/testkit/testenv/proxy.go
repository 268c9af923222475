package testenv

import (
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy is a TCP forwarder in front of a real service, so a test can take the
// service away from the code under test without stopping a server other test
// packages share: Cut drops every connection and refuses new ones (the service
// is down), Stall keeps connections open but stops every byte (the service
// hangs), Delay adds latency to every chunk forwarded (the service is slow).
type Proxy struct {
	target string
	ln     net.Listener

	mu      sync.Mutex
	down    bool
	stalled bool
	delay   time.Duration
	changed chan struct{} // closed and replaced on every state change
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

// NewProxy listens on a free loopback port and forwards to target
// (host:port). It is closed when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: proxy listen: %v", err)
	}
	p := &Proxy{target: target, ln: ln, conns: make(map[net.Conn]struct{}), changed: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// notify wakes every pipe waiting on a state change; p.mu must be held.
func (p *Proxy) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Cut drops every open connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.notify()
}

// Stall stops forwarding bytes in both directions on every connection, open
// or new, while keeping the connections open, until Restore: to the client
// the service has hung.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = true
	p.notify()
}

// Delay holds every chunk of bytes for d before forwarding it (0: none).
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
	p.notify()
}

// Restore ends a Cut or a Stall (a Delay stays until Delay(0)).
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
	p.stalled = false
	p.notify()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.mu.Unlock()
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !p.track(c, up) {
			continue
		}
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

// track registers a connection pair, unless the proxy was cut meanwhile.
func (p *Proxy) track(a, b net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		_ = a.Close()
		_ = b.Close()
		return false
	}
	p.conns[a] = struct{}{}
	p.conns[b] = struct{}{}
	return true
}

// gate blocks while the proxy is stalled, then waits out the delay; it
// reports false when the proxy was cut meanwhile (the chunk is dropped).
func (p *Proxy) gate() bool {
	for {
		p.mu.Lock()
		down, stalled, delay, changed := p.down, p.stalled, p.delay, p.changed
		p.mu.Unlock()
		switch {
		case down:
			return false
		case stalled:
			<-changed
		case delay > 0:
			timer := time.NewTimer(delay)
			select {
			case <-timer.C:
				return true
			case <-changed:
				timer.Stop()
				// State changed mid-delay (e.g. cut): look again.
			}
		default:
			return true
		}
	}
}

func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.gate() {
				break
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			// EOF or a closed connection: either way the pair is done.
			break
		}
	}
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

func (p *Proxy) close() {
	_ = p.ln.Close()
	p.Cut()
	p.wg.Wait()
}
