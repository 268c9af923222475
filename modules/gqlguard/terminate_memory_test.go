package gqlguard

import (
	"net"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// TestTerminatedSocketMemory is a test-scale measurement, run only with
// CIVICGATE_MEMORY_SOCKETS=<n>: n idle sockets with one subscription each
// through the whole Caddy route (guard, scope, credential-free request
// context kept for the socket's checks, hub), against the library engine
// with dedup (one engine subscription). It logs heap in use plus goroutine
// stacks per socket after GC, minus what the n client ends cost (measured in
// the same run as plain TCP pairs: half of each pair is the client's).
// CI does not run it: it needs 2n descriptors and minutes on a loaded host.
//
//	CIVICGATE_MEMORY_SOCKETS=5000 go test -run TestTerminatedSocketMemory -v ./modules/gqlguard/
func TestTerminatedSocketMemory(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv("CIVICGATE_MEMORY_SOCKETS"))
	if err != nil || n <= 0 {
		t.Skip("set CIVICGATE_MEMORY_SOCKETS to measure")
	}
	e := startTerminating(t, "dedup key")
	perClientPair := tcpPairCost(t, n)
	before := memoryInUse()
	goroutinesBefore := runtime.NumGoroutine()
	for i := range n {
		w := e.dialRaw(t, 0)
		w.sendText(`{"type":"connection_init"}`)
		w.sendText(`{"id":"1","type":"subscribe","payload":{"query":` + jsonString(loanEventsSub) + `}}`)
		w.sendText(`{"type":"ping"}`)
		for got := 0; got < 2; {
			_, p, err := w.readFrame()
			if err != nil {
				t.Fatalf("socket %d: %v", i, err)
			}
			if string(p) == `{"type":"connection_ack"}` || string(p) == `{"type":"pong"}` {
				got++
			}
		}
	}
	after := memoryInUse()
	t.Logf("%d sockets: %.0f B per socket through Caddy (client ends excluded: a plain TCP pair costs %.0f B here), %.2f goroutines per socket, engine subscriptions %d",
		n, float64(after-before)/float64(n)-perClientPair/2, perClientPair, float64(runtime.NumGoroutine()-goroutinesBefore)/float64(n), e.events.Subscribers())
}

func memoryInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// tcpPairCost is the heap+stack of one plain loopback TCP connection pair
// (both ends held, no goroutine), measured over n pairs.
func tcpPairCost(t *testing.T, n int) float64 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	base := memoryInUse()
	conns := make([]net.Conn, 0, 2*n)
	for range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c, s)
	}
	cost := float64(memoryInUse()-base) / float64(n)
	for _, c := range conns {
		_ = c.Close()
	}
	return cost
}
