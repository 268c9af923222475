package main

// The client side: graphql-transport-ws sockets that subscribe and record
// when each event arrives.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// bench is the state shared by one cell's readers and the publisher.
type bench struct {
	published []atomic.Int64 // publish time (UnixNano) per event sequence
	lat       []int64        // delivery latencies, ns
	n         atomic.Int64
	bad       atomic.Int64
}

var nextPrefix = []byte(`"id":"ev-`)

func (b *bench) record(msg []byte, now int64) bool {
	i := bytes.Index(msg, nextPrefix)
	if i < 0 {
		return false
	}
	j := i + len(nextPrefix)
	seq := 0
	for ; j < len(msg) && msg[j] >= '0' && msg[j] <= '9'; j++ {
		seq = seq*10 + int(msg[j]-'0')
	}
	if seq >= len(b.published) {
		b.bad.Add(1)
		return true
	}
	k := b.n.Add(1) - 1
	if int(k) < len(b.lat) {
		b.lat[k] = now - b.published[seq].Load()
	}
	return true
}

type socket struct {
	c *websocket.Conn
}

func open(ctx context.Context, t target, bearer string, subs int, b *bench) (*socket, error) {
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
		return nil, fmt.Errorf("%s: want connection_ack, got %s", t.name, m)
	}
	var batch bytes.Buffer
	for i := range subs {
		batch.Reset()
		fmt.Fprintf(&batch, `{"id":"%d","type":"subscribe","payload":{"query":%q}}`, i, subscribeQuery)
		if err := c.Write(dctx, websocket.MessageText, batch.Bytes()); err != nil {
			return nil, err
		}
	}
	s := &socket{c: c}
	go s.read(ctx, b)
	return s, nil
}

func (s *socket) read(ctx context.Context, b *bench) {
	for {
		_, m, err := s.c.Read(ctx)
		if err != nil {
			return
		}
		now := time.Now().UnixNano()
		if b.record(m, now) {
			continue
		}
		switch {
		case bytes.Contains(m, []byte(`"type":"ping"`)):
			_ = s.c.Write(ctx, websocket.MessageText, []byte(`{"type":"pong"}`))
		case bytes.Contains(m, []byte(`"type":"pong"`)):
		default:
			b.bad.Add(1)
			fmt.Fprintf(os.Stderr, "subsload: unexpected frame %.200s\n", m)
		}
	}
}
