package gqlguard

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/civicgate/civicgate/examples/other-backend/library"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/gqlguard/subscribe/wsproxy"
)

// Helpers of terminate_test.go: graphql_guard terminating subscriptions in
// front of the real library engine (examples/other-backend/library) as a
// graphql-transport-ws upstream.

// termEnv is a gateway terminating /ws, the engine behind it, and the
// engine's counts.
type termEnv struct {
	events   *library.LoanEvents
	engine   *httptest.Server
	upgrades atomic.Int64 // WebSocket upgrades the engine received
	activeWS atomic.Int64 // WebSockets the engine serves now
	s        *server
	wsURL    string
}

// startTerminating starts the engine and a gateway whose subscriptions
// block is subs (the upstream line is added).
func startTerminating(t *testing.T, subs string) *termEnv {
	t.Helper()
	return startTerminatingVia(t, subs, nil)
}

// startTerminatingVia is startTerminating with the gateway reaching the
// engine through proxy (nil: directly).
func startTerminatingVia(t *testing.T, subs string, proxy func(engineAddr string) string) *termEnv {
	t.Helper()
	return startTerminatingGuard(t, "", subs, proxy)
}

// startTerminatingGuard is startTerminatingVia with guard, lines of the
// graphql_guard block beside subscriptions (e.g. methods GET POST).
func startTerminatingGuard(t *testing.T, guard, subs string, proxy func(engineAddr string) string) *termEnv {
	t.Helper()
	e := &termEnv{events: library.NewLoanEvents()}
	engine := library.NewHandler(library.NewCatalog(), e.events, library.Options{})
	e.engine = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if wsproxy.IsUpgrade(r) {
			e.upgrades.Add(1)
			e.activeWS.Add(1)
			defer e.activeWS.Add(-1) // gqlgen serves the socket inside ServeHTTP
		}
		engine.ServeHTTP(w, r)
	}))
	t.Cleanup(e.engine.Close)
	schema, err := filepath.Abs("../../examples/other-backend/library.graphqls")
	if err != nil {
		t.Fatal(err)
	}
	upstream := e.engine.Listener.Addr().String()
	if proxy != nil {
		upstream = proxy(upstream)
	}
	e.s = startCaddy(t, fmt.Sprintf(`
	route /ws {
		graphql_guard {
			schema %s
			%s
			subscriptions {
				upstream ws://%s/graphql
				%s
			}
		}
		respond "the guard answers every upgrade" 500
	}`, schema, guard, upstream, subs))
	e.wsURL = "ws" + strings.TrimPrefix(e.s.base, "http") + "/ws"
	return e
}

// publish sends one loan event through the engine.
func (e *termEnv) publish(id string) { e.publishDue(id, "") }

// publishDue sends one loan event whose due member is due (a test that
// selects it makes events of any size).
func (e *termEnv) publishDue(id, due string) {
	e.events.Publish(&library.LoanEvent{Kind: library.LoanEventKindBorrowed, Loan: &library.Loan{ID: id, Due: due}})
}

// awaitEngineSubscribers waits until the engine holds n subscriptions.
func (e *termEnv) awaitEngineSubscribers(t *testing.T, n int) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, fmt.Sprintf("%d subscriptions at the engine", n), func() error {
		if got := e.events.Subscribers(); got != n {
			return fmt.Errorf("engine holds %d", got)
		}
		return nil
	})
}

// termClient is a graphql-transport-ws client (coder/websocket) on the
// terminating gateway.
type termClient struct {
	t   *testing.T
	ctx context.Context
	c   *websocket.Conn
}

func (e *termEnv) dial(t *testing.T) *termClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	c, resp, err := websocket.Dial(ctx, e.wsURL, &websocket.DialOptions{Subprotocols: []string{wsproxy.Subprotocol}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Sec-Websocket-Protocol") != wsproxy.Subprotocol {
		t.Fatalf("subprotocol %q", resp.Header.Get("Sec-Websocket-Protocol"))
	}
	c.SetReadLimit(1 << 20)
	t.Cleanup(func() { _ = c.CloseNow() })
	return &termClient{t: t, ctx: ctx, c: c}
}

func (c *termClient) send(m wsMessage) {
	c.t.Helper()
	out, _ := json.Marshal(m)
	if err := c.c.Write(c.ctx, websocket.MessageText, out); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *termClient) read() wsMessage {
	c.t.Helper()
	_, data, err := c.c.Read(c.ctx)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	var m wsMessage
	if err := json.Unmarshal(data, &m); err != nil {
		c.t.Fatal(err)
	}
	return m
}

// init sends connection_init and expects the ack.
func (c *termClient) init() {
	c.t.Helper()
	c.send(wsMessage{Type: "connection_init"})
	if m := c.read(); m.Type != "connection_ack" {
		c.t.Fatalf("connection_init answered %+v", m)
	}
}

func (c *termClient) subscribe(id, query string) {
	c.t.Helper()
	c.send(wsMessage{Type: "subscribe", ID: id, Payload: json.RawMessage(`{"query":` + jsonString(query) + `}`)})
}

// joined sends a ping and reads the pong: the gateway handles a socket's
// messages in order, so every subscribe sent before has joined its group
// (or been refused: a refusal would be read here instead).
func (c *termClient) joined() {
	c.t.Helper()
	c.send(wsMessage{Type: "ping"})
	if m := c.read(); m.Type != "pong" {
		c.t.Fatalf("awaiting the pong: %s %s %s", m.Type, m.ID, m.Payload)
	}
}

// expectNext reads one message and wants the next of id carrying the loan.
func (c *termClient) expectNext(id, loan string) {
	c.t.Helper()
	m := c.read()
	want := `{"data":{"loanEvents":{"kind":"BORROWED","loan":{"id":"` + loan + `"}}}}`
	if m.Type != "next" || m.ID != id || string(m.Payload) != want {
		c.t.Fatalf("got %s %s %s, want next %s %s", m.Type, m.ID, m.Payload, id, want)
	}
}

// closeCode reads until the socket closes and returns the close status.
func (c *termClient) closeCode() (websocket.StatusCode, string) {
	c.t.Helper()
	for {
		_, _, err := c.c.Read(c.ctx)
		if err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) {
				c.t.Fatalf("socket ended without a close frame: %v", err)
			}
			return ce.Code, ce.Reason
		}
	}
}

// rawWS is a hand-made client socket: it answers nothing by itself (no
// pong) and reads only when told, so a test can be a client that stops
// reading or never answers a ping.
type rawWS struct {
	t    *testing.T
	conn net.Conn
	br   *bufio.Reader
}

// dialRaw opens the socket with a receive buffer of rcvbuf bytes (0: the
// system's).
func (e *termEnv) dialRaw(t *testing.T, rcvbuf int) *rawWS {
	t.Helper()
	addr := strings.TrimPrefix(e.s.base, "http://")
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		if rcvbuf <= 0 {
			return nil
		}
		// Before connecting, so the window the client advertises is small too.
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
		}); err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	var key [16]byte
	_, _ = rand.Read(key[:])
	req := "GET /ws HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" +
		"Sec-WebSocket-Key: " + base64.StdEncoding.EncodeToString(key[:]) + "\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n"
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReaderSize(conn, 256)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v %v", resp, err)
	}
	return &rawWS{t: t, conn: conn, br: br}
}

// sendText sends one masked text frame.
func (w *rawWS) sendText(msg string) {
	w.t.Helper()
	if err := w.sendFrame(0x1, msg); err != nil {
		w.t.Fatal(err)
	}
}

// sendFrame sends one masked final frame of opcode op (callable from a
// reading goroutine: it reports, never fails the test).
func (w *rawWS) sendFrame(op byte, msg string) error {
	var key [4]byte
	_, _ = rand.Read(key[:])
	b := []byte{0x80 | op}
	switch n := len(msg); {
	case n <= 125:
		b = append(b, 0x80|byte(n))
	default:
		b = append(b, 0x80|126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	}
	b = append(b, key[:]...)
	for i := 0; i < len(msg); i++ {
		b = append(b, msg[i]^key[i&3])
	}
	_, err := w.conn.Write(b)
	return err
}

// readMessage reads the next non-control frame, answering the server's
// pings with their pong on the way: a server may ping at any time (RFC 6455
// section 5.5.2; every keepalive here), and a slow run outlasts one.
func (w *rawWS) readMessage() (op byte, payload []byte, err error) {
	for {
		op, payload, err = w.readFrame()
		if err != nil || op != 0x9 {
			return op, payload, err
		}
		if err := w.sendFrame(0xA, string(payload)); err != nil {
			return 0, nil, fmt.Errorf("answering a ping: %w", err)
		}
	}
}

// readFrame reads one server frame: its opcode and payload.
func (w *rawWS) readFrame() (op byte, payload []byte, err error) {
	var h [2]byte
	if _, err := io.ReadFull(w.br, h[:]); err != nil {
		return 0, nil, err
	}
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var l [2]byte
		if _, err := io.ReadFull(w.br, l[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		if _, err := io.ReadFull(w.br, l[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(l[:])
	}
	payload = make([]byte, n)
	_, err = io.ReadFull(w.br, payload)
	return h[0] & 0x0F, payload, err
}

// awaitClose reads frames (answering nothing) until the close frame.
func (w *rawWS) awaitClose() (code uint16, reason string) {
	w.t.Helper()
	_ = w.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		op, p, err := w.readFrame()
		if err != nil {
			w.t.Fatalf("no close frame: %v", err)
		}
		if op == 0x8 && len(p) >= 2 {
			return binary.BigEndian.Uint16(p), string(p[2:])
		}
	}
}

// cuttableProxy forwards TCP to the engine; cut drops every connection it
// carries (an upstream restart as the gateway sees it).
type cuttableProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
}

func newCuttableProxy(t *testing.T, target string) *cuttableProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cuttableProxy{ln: ln, target: target}
	t.Cleanup(func() { _ = ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); _ = u.Close() }()
			go func() { _, _ = io.Copy(c, u); _ = c.Close() }()
		}
	}()
	return p
}

func (p *cuttableProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// metricValue reads one unlabelled metric from the test server's admin
// endpoint (0 when absent).
func metricValue(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://localhost:%d/metrics", adminPort))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	return 0
}
