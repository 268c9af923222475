package wsproxy

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/examples/other-backend/library"
	"github.com/civicgate/civicgate/modules/gqlguard/subscribe/subhub"
)

// BenchmarkTerminatedSocketMemory measures what one idle terminated socket
// with one subscription costs the gateway: heap in use plus goroutine
// stacks after GC, N sockets against the real library engine (one shared
// upstream subscription, dedup), minus the cost of N plain TCP connection
// pairs measured in the same run (the clients live in this process).
// N: WS_MEMORY_SOCKETS (default 2000; each socket takes two descriptors).
// b.N is not used: one measurement.
//
//	go test -run '^$' -bench TerminatedSocketMemory -benchtime 1x ./modules/gqlguard/wsproxy/
func BenchmarkTerminatedSocketMemory(b *testing.B) {
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("WS_MEMORY_SOCKETS")); err == nil && v > 0 {
		n = v
	}
	events := library.NewLoanEvents()
	engine := httptest.NewServer(library.NewHandler(library.NewCatalog(), events, library.Options{}))
	defer engine.Close()
	hub := subhub.New(subhub.Config{URL: "ws://" + engine.Listener.Addr().String() + "/graphql"})
	defer hub.Close()
	scope := subhub.Scope{Identity: "bench", Dedup: "bench"}
	reg := new(Sockets)
	defer reg.CloseAll()
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := Terminate(w, r, TerminateConfig{Upstream: benchUpstream{hub, scope}}, reg)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	}))
	defer gw.Close()
	addr := gw.Listener.Addr().String()

	// Baseline: n TCP connection pairs, both ends held, no goroutine.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, n)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	base0 := memInUse()
	var pairs []net.Conn
	for range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		pairs = append(pairs, c, <-accepted)
	}
	basePerPair := float64(memInUse()-base0) / float64(n)
	for _, c := range pairs {
		_ = c.Close()
	}

	before := memInUse()
	clients := make([]net.Conn, 0, n)
	for i := range n {
		clients = append(clients, benchSubscribe(b, addr, i))
	}
	for reg.Len() < n || events.Subscribers() != 1 {
		time.Sleep(10 * time.Millisecond)
	}
	after := memInUse()
	perSocket := float64(after-before)/float64(n) - basePerPair/2 // the client end is the test's
	b.ReportMetric(perSocket, "B/socket")
	b.ReportMetric(basePerPair, "B/tcp-pair")
	b.ReportMetric(float64(runtime.NumGoroutine())/float64(n), "goroutines/socket")
	for _, c := range clients {
		_ = c.Close()
	}
}

// memInUse is heap in use plus goroutine stacks after a full GC.
func memInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

type benchUpstream struct {
	hub   *subhub.Hub
	scope subhub.Scope
}

func (u benchUpstream) Subscribe(payload []byte, sink subhub.Sink) (func(), error) {
	return u.hub.Subscribe(u.scope, payload, sink)
}

// benchSubscribe opens a raw client socket, initialises it and subscribes;
// it waits for the pong after the subscribe (the subscription has joined).
func benchSubscribe(b *testing.B, addr string, i int) net.Conn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	var key [16]byte
	_, _ = rand.Read(key[:])
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n",
		addr, base64.StdEncoding.EncodeToString(key[:]))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		b.Fatalf("handshake %d: %v", i, err)
	}
	for _, msg := range []string{
		`{"type":"connection_init"}`,
		`{"id":"1","type":"subscribe","payload":{"query":"subscription { loanEvents { kind } }"}}`,
		`{"type":"ping"}`,
	} {
		_, _ = c.Write(appendClientFrame(nil, opText, []byte(msg)))
	}
	for want := 2; want > 0; { // connection_ack, pong
		var h [2]byte
		if _, err := br.Read(h[:1]); err != nil {
			b.Fatal(err)
		}
		if _, err := br.Read(h[1:]); err != nil {
			b.Fatal(err)
		}
		p := make([]byte, h[1]&0x7F)
		if _, err := io.ReadFull(br, p); err != nil {
			b.Fatal(err)
		}
		if strings.Contains(string(p), "connection_ack") || strings.Contains(string(p), "pong") {
			want--
		}
	}
	return c
}
