package main

// The client side: graphql-transport-ws sockets that subscribe and record
// when each event reaches each subscription.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// maxWarmups bounds the warm-up events of one cell (see warmUp).
const maxWarmups = 64

// bench is the state shared by one cell's readers and the publisher.
// Subscription i of socket s is subscription s*subs+i of the cell.
type bench struct {
	subs, total int
	recv        []atomic.Int64 // receipt time (UnixNano) of event seq by subscription k: recv[seq*total+k]
	got         []atomic.Int64 // receipts per event
	warmGot     []atomic.Int64 // receipts per warm-up event
	n           atomic.Int64   // receipts of measured events
	bad         atomic.Int64   // unexpected, duplicate or unparsable frames
	complaints  atomic.Int64   // unexpected frames printed so far
}

func newBench(sh shape, events int) *bench {
	total := sh.sockets * sh.subs
	return &bench{subs: sh.subs, total: total, recv: make([]atomic.Int64, total*events),
		got: make([]atomic.Int64, events), warmGot: make([]atomic.Int64, maxWarmups)}
}

type envelope struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// The loan id of a published event is its only string starting so; matched
// without the key, so that a proxy re-encoding the payload still matches.
var (
	eventPrefix = []byte(`"ev-`)
	warmPrefix  = []byte(`"warm-`)
)

// number reads the decimal after prefix in b, or -1.
func number(b, prefix []byte) int {
	i := bytes.Index(b, prefix)
	if i < 0 {
		return -1
	}
	n, j := 0, i+len(prefix)
	if j >= len(b) || b[j] < '0' || b[j] > '9' {
		return -1
	}
	for ; j < len(b) && b[j] >= '0' && b[j] <= '9'; j++ {
		n = n*10 + int(b[j]-'0')
	}
	return n
}

// next records a `next` frame of socket sock read at now; false if it was
// not one of this cell's events.
func (b *bench) next(sock int, env *envelope, now int64) bool {
	id, err := strconv.Atoi(env.ID)
	if err != nil || id < 0 || id >= b.subs {
		return false
	}
	k := sock*b.subs + id
	if seq := number(env.Payload, eventPrefix); seq >= 0 {
		if seq >= len(b.got) || !b.recv[seq*b.total+k].CompareAndSwap(0, now) {
			return false
		}
		b.got[seq].Add(1)
		b.n.Add(1)
		return true
	}
	if w := number(env.Payload, warmPrefix); w >= 0 && w < len(b.warmGot) {
		b.warmGot[w].Add(1)
		return true
	}
	return false
}

func (b *bench) complain(m []byte) {
	b.bad.Add(1)
	if b.complaints.Add(1) <= 5 {
		fmt.Fprintf(os.Stderr, "subsload: unexpected frame %.200s\n", m)
	}
}

type socket struct {
	c *websocket.Conn
}

func open(ctx context.Context, t target, bearer string, sock int, b *bench) (*socket, error) {
	h := http.Header{}
	if t.auth {
		h.Set("Authorization", "Bearer "+bearer)
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(dctx, t.url, &websocket.DialOptions{HTTPHeader: h, Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("dial %s: %w (HTTP %d)", t.name, err, resp.StatusCode)
		}
		return nil, fmt.Errorf("dial %s: %w", t.name, err)
	}
	c.SetReadLimit(1 << 20)
	if err := c.Write(dctx, websocket.MessageText, []byte(`{"type":"connection_init","payload":{}}`)); err != nil {
		return nil, err
	}
	_, m, err := c.Read(dctx)
	if err != nil {
		return nil, fmt.Errorf("%s: connection_ack: %w", t.name, err)
	}
	if !bytes.Contains(m, []byte(`"connection_ack"`)) {
		return nil, fmt.Errorf("%s: want connection_ack, got %.200s", t.name, m)
	}
	var batch bytes.Buffer
	for i := range b.subs {
		batch.Reset()
		fmt.Fprintf(&batch, `{"id":"%d","type":"subscribe","payload":{"query":%q}}`, i, subscribeQuery)
		if err := c.Write(dctx, websocket.MessageText, batch.Bytes()); err != nil {
			return nil, err
		}
	}
	s := &socket{c: c}
	go s.read(ctx, sock, b)
	return s, nil
}

func (s *socket) read(ctx context.Context, sock int, b *bench) {
	var env envelope
	for {
		_, m, err := s.c.Read(ctx)
		if err != nil {
			return
		}
		now := time.Now().UnixNano()
		env = envelope{}
		if err := json.Unmarshal(m, &env); err != nil {
			b.complain(m)
			continue
		}
		switch env.Type {
		case "next":
			if !b.next(sock, &env, now) {
				b.complain(m)
			}
		case "ping":
			_ = s.c.Write(ctx, websocket.MessageText, []byte(`{"type":"pong"}`))
		case "pong":
		default:
			b.complain(m)
		}
	}
}
