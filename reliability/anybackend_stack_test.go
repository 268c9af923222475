package reliability

import (
	"bufio"
	"bytes"
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
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"github.com/civicgate/civicgate/examples/other-backend/library"
	"github.com/civicgate/civicgate/internal/stack"
	"github.com/civicgate/civicgate/internal/testenv"
)

// anyBackend is the real civicgate binary (graphql_guard with subscriptions
// and APQ) in front of the real gqlgen library engine of
// examples/other-backend, served in this process on its own port and
// recorded. Each one has its own stack (database, Redis prefix, ports, data
// directory) and its own keys file.
type anyBackend struct {
	t        *testing.T
	s        *stack.Stack
	gw       *stack.Proc
	keysFile string
	Addr     string // 127.0.0.1:<port> of the gateway
	URL      string // http://<Addr>/graphql
	Events   *library.LoanEvents
	Up       *upstreamLog
	keys     []string
}

// upstreamLog is everything the engine received.
type upstreamLog struct {
	mu       sync.Mutex
	requests int
	bodies   bytes.Buffer // every request's headers and body, every operation
	ops      []string     // operations' query text, on every transport
}

func (u *upstreamLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		u.mu.Lock()
		u.requests++
		fmt.Fprintf(&u.bodies, "%s %s\n", r.Method, r.URL)
		_ = r.Header.Write(&u.bodies)
		u.bodies.Write(b)
		u.bodies.WriteByte('\n')
		u.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (u *upstreamLog) onOperation(_ context.Context, op *graphql.OperationContext) {
	b, _ := json.Marshal(op.Variables)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.ops = append(u.ops, op.RawQuery)
	fmt.Fprintf(&u.bodies, "op %s %s %v\n", op.RawQuery, b, op.Extensions)
	_ = op.Headers.Write(&u.bodies)
}

func (u *upstreamLog) requestCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.requests
}

// opsWith counts the operations whose text contains s.
func (u *upstreamLog) opsWith(s string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, q := range u.ops {
		if strings.Contains(q, s) {
			n++
		}
	}
	return n
}

func (u *upstreamLog) saw(s string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return strings.Contains(u.bodies.String(), s)
}

var anyLiveKey = regexp.MustCompile(`cg_live_[0-9A-Za-z]+`)

// anyBackendCaddyfile is the guard of examples/other-backend/Caddyfile with
// the given graphql_guard options added.
const anyBackendCaddyfile = `{
	admin {$CIVICGATE_ADMIN}
	civic_auth {
		keys file {$ANY_KEYS_FILE}
		environment live
		identity_secret {env.CIVIC_IDENTITY_SECRET}
		tier partner 1000000/m catalog loans
		tier trickle 3/h catalog loans
	}
}

http://{$ANY_ADDR} {
	route /graphql {
		civic_auth
		civic_rate_limit
		graphql_guard {
			schema {$ANY_SCHEMA}
			limit_argument first
			max_depth 6
			operations query mutation subscription
			family catalog books book authors
			family loans loans Mutation.borrowBook Mutation.returnBook Subscription.loanEvents
%s
		}
		reverse_proxy {$ANY_UPSTREAM} {
			flush_interval -1
		}
	}
	handle_errors {
		header Content-Type application/json
		respond ` + "`" + `{"error":"{http.error.status_text}"}` + "`" + ` {http.error.status_code}
	}
}
`

// startAnyBackend starts the engine, issues one partner key per name in
// keys (returned in order) and starts the gateway with guardOptions.
func startAnyBackend(t *testing.T, guardOptions string, keys ...string) (*anyBackend, []string) {
	t.Helper()
	s := stack.New(t, &bins)
	a := &anyBackend{t: t, s: s, Up: &upstreamLog{}, Events: library.NewLoanEvents()}
	secret := []byte(s.Getenv("CIVIC_IDENTITY_SECRET"))
	engine := library.NewHandler(library.NewCatalog(), a.Events, library.Options{
		IdentitySecret: secret,
		KeepAlive:      time.Hour, // no graphql-transport-ws pings in the transcripts
		OnOperation:    a.Up.onOperation,
	})
	mux := http.NewServeMux()
	mux.Handle("/graphql", a.Up.wrap(engine))
	backend := httptest.NewServer(mux)
	t.Cleanup(backend.Close)

	a.Addr = "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	a.URL = "http://" + a.Addr + "/graphql"
	a.keysFile = filepath.Join(s.Dir, "keys.json")
	s.Setenv("ANY_ADDR", a.Addr)
	s.Setenv("ANY_KEYS_FILE", a.keysFile)
	s.Setenv("ANY_UPSTREAM", strings.TrimPrefix(backend.URL, "http://"))
	s.Setenv("ANY_SCHEMA", filepath.Join(s.Root, "examples", "other-backend", "library.graphqls"))
	var issued []string
	for _, tier := range keys {
		out := s.Run(bins.Civicgate, "keys", "issue", "--org", "org-"+tier+"-"+testenv.RandomSuffix(6), "--tier", tier, "--env", "live", "--file", a.keysFile)
		k := anyLiveKey.FindString(out)
		if k == "" {
			t.Fatal("keys issue printed no key")
		}
		issued = append(issued, k)
	}
	a.keys = issued
	cf := filepath.Join(s.Dir, "Caddyfile")
	if err := os.WriteFile(cf, []byte(fmt.Sprintf(anyBackendCaddyfile, guardOptions)), 0o600); err != nil {
		t.Fatal(err)
	}
	a.gw = s.SpawnProc("civicgate", bins.Civicgate, "run", "--config", cf, "--adapter", "caddyfile")
	stack.WaitFor(t, 60*time.Second, "any-backend gateway", func() error {
		if a.gw.Exited() {
			t.Fatalf("civicgate exited while starting; log %s", a.gw.Log)
		}
		resp, err := http.Post(a.URL, "application/json", strings.NewReader(`{}`))
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	t.Cleanup(func() {
		for _, k := range a.keys {
			if a.Up.saw(k) {
				t.Errorf("the engine received a key (%s…)", k[:12])
			}
		}
		a.s.CheckLogs(t, a.keys...)
	})
	return a, issued
}

// heapMetric is the gateway's Go heap in use: under -race its RSS also
// holds the race detector's shadow memory, which grows with any traffic.
const heapMetric = "go_memstats_heap_inuse_bytes"

// metric reads one gateway metric.
func (a *anyBackend) metric(name string) float64 {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := a.s.GatewayMetric(ctx, name)
	if err != nil {
		a.t.Fatalf("%s: %v", name, err)
	}
	return v
}

// alive fails unless the gateway process runs and answers.
func (a *anyBackend) alive(key string) {
	a.t.Helper()
	if a.gw.Exited() {
		a.t.Fatalf("civicgate exited; log %s", a.gw.Log)
	}
	st, body := a.post(key, `{"query":"{ book(id:\"b1\") { title } }"}`)
	if st != 200 || !strings.Contains(body, "Middlemarch") {
		a.t.Fatalf("gateway after the abuse: %d %s", st, body)
	}
}

// post sends one GraphQL POST.
func (a *anyBackend) post(key, body string) (int, string) {
	a.t.Helper()
	st, b, _, err := doRequest(http.DefaultClient, http.MethodPost, a.URL, key, body)
	if err != nil {
		a.t.Fatal(err)
	}
	return st, b
}

func doRequest(c *http.Client, method, url, key, body string) (int, string, http.Header, error) {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), resp.Header, err
}

// wsConn is a raw WebSocket client: it writes any frame, well formed or not,
// and reads the server's frames as they are.
type wsConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
	wm sync.Mutex
}

// dialWS upgrades to graphql-transport-ws with the key in Authorization.
func (a *anyBackend) dialWS(key string) *wsConn {
	a.t.Helper()
	c, err := net.DialTimeout("tcp", a.Addr, 10*time.Second)
	if err != nil {
		a.t.Fatal(err)
	}
	a.t.Cleanup(func() { c.Close() })
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	req := "GET /graphql HTTP/1.1\r\nHost: " + a.Addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + base64.StdEncoding.EncodeToString(nonce) + "\r\nSec-WebSocket-Version: 13\r\n" +
		"Sec-WebSocket-Protocol: graphql-transport-ws\r\nAuthorization: Bearer " + key + "\r\n\r\n"
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		a.t.Fatal(err)
	}
	br := bufio.NewReaderSize(c, 64<<10)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		a.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(resp.Body)
		a.t.Fatalf("upgrade: %d %s", resp.StatusCode, b)
	}
	if p := resp.Header.Get("Sec-WebSocket-Protocol"); p != "graphql-transport-ws" {
		a.t.Fatalf("upgrade subprotocol %q", p)
	}
	_ = c.SetDeadline(time.Time{})
	return &wsConn{t: a.t, c: c, br: br}
}

const (
	opCont  = 0x0
	opText  = 0x1
	opClose = 0x8
	opPing  = 0x9
	opPong  = 0xA
)

// header is a client frame header (masked) announcing n payload bytes.
func frameHeader(fin bool, op byte, n uint64, mask [4]byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	h := []byte{b0, 0}
	switch {
	case n < 126:
		h[1] = 0x80 | byte(n)
	case n <= 0xFFFF:
		h[1] = 0x80 | 126
		h = binary.BigEndian.AppendUint16(h, uint16(n))
	default:
		h[1] = 0x80 | 127
		h = binary.BigEndian.AppendUint64(h, n)
	}
	return append(h, mask[:]...)
}

// frame is one complete masked client frame.
func frame(fin bool, op byte, payload []byte) []byte {
	var mask [4]byte
	_, _ = rand.Read(mask[:])
	out := frameHeader(fin, op, uint64(len(payload)), mask)
	for i, c := range payload {
		out = append(out, c^mask[i%4])
	}
	return out
}

// write writes raw bytes (frames); an error is returned, not fatal, since
// the server may close while a large frame is being written.
func (w *wsConn) write(b []byte) error {
	w.wm.Lock()
	defer w.wm.Unlock()
	_ = w.c.SetWriteDeadline(time.Now().Add(20 * time.Second))
	_, err := w.c.Write(b)
	return err
}

// send writes one text message; it fails the test on error.
func (w *wsConn) send(msg string) {
	if err := w.write(frame(true, opText, []byte(msg))); err != nil {
		w.t.Errorf("write: %v", err)
	}
}

// wsFrame is one server frame.
type wsFrame struct {
	op      byte
	fin     bool
	payload []byte
}

// closeCode is a close frame's code and reason.
func (f wsFrame) closeCode() (int, string) {
	if len(f.payload) < 2 {
		return 1005, ""
	}
	return int(binary.BigEndian.Uint16(f.payload)), string(f.payload[2:])
}

// read reads one frame, waiting at most until deadline.
func (w *wsConn) read(deadline time.Time) (wsFrame, error) {
	_ = w.c.SetReadDeadline(deadline)
	var h [2]byte
	if _, err := io.ReadFull(w.br, h[:]); err != nil {
		return wsFrame{}, err
	}
	f := wsFrame{op: h[0] & 0x0F, fin: h[0]&0x80 != 0}
	if h[1]&0x80 != 0 {
		return f, errors.New("server frame is masked")
	}
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(w.br, b[:]); err != nil {
			return f, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(w.br, b[:]); err != nil {
			return f, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	if n > 16<<20 {
		return f, fmt.Errorf("server frame of %d bytes", n)
	}
	f.payload = make([]byte, n)
	_, err := io.ReadFull(w.br, f.payload)
	return f, err
}

// gqlMsg is one graphql-transport-ws message from the server.
type gqlMsg struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// next reads the next text message; a close frame or an error fails the
// test.
func (w *wsConn) next(deadline time.Time) gqlMsg {
	w.t.Helper()
	for {
		f, err := w.read(deadline)
		if err != nil {
			w.t.Fatalf("reading a message: %v", err)
		}
		switch f.op {
		case opPing:
			_ = w.write(frame(true, opPong, f.payload))
			continue
		case opClose:
			code, reason := f.closeCode()
			w.t.Fatalf("socket closed with %d %q while a message was awaited", code, reason)
		case opText:
		default:
			w.t.Fatalf("unexpected frame opcode %d", f.op)
		}
		var m gqlMsg
		if err := json.Unmarshal(f.payload, &m); err != nil {
			w.t.Fatalf("message %q: %v", f.payload, err)
		}
		return m
	}
}

// init sends connection_init and awaits connection_ack.
func (w *wsConn) init() {
	w.t.Helper()
	w.send(`{"type":"connection_init"}`)
	if m := w.next(time.Now().Add(10 * time.Second)); m.Type != "connection_ack" {
		w.t.Fatalf("after connection_init: %+v", m)
	}
}

// awaitClose reads until the server's close frame (text messages before it
// are skipped) and returns its code and reason, and how long it took.
func (w *wsConn) awaitClose(within time.Duration) (int, string) {
	w.t.Helper()
	deadline := time.Now().Add(within)
	for {
		f, err := w.read(deadline)
		if err != nil {
			w.t.Fatalf("no close frame: %v", err)
		}
		if f.op == opClose {
			return f.closeCode()
		}
	}
}
