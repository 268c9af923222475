package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// The write floor: what one frame to one subscriber costs the writing process
// on this machine before any gateway code runs. On loopback TCP the kernel
// delivers the bytes into the reader's socket inside the writer's write(2),
// so the writer pays for both ends of the stack. `subsload floor` measures it
// with its own CPU time: SOCKETS connections to a sink in a child process
// (`subsload sink`, which only reads), EVENTS frames of floorFrame bytes
// written to each, first from one goroutine, then with a goroutine and a
// write deadline per frame (the shape of a socket whose writer is woken per
// message). The gateway's CPU per delivered message is compared with it in
// BENCHMARKS.md.

// floorFrame is about the size of a loanEvents "next" frame.
const floorFrame = 160

func runFloor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("subsload floor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sockets := fs.Int("sockets", 5000, "connections written to")
	events := fs.Int("events", 20, "frames written to each connection per way of writing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *sockets < 1 || *events < 1 {
		return errors.New("--sockets and --events must be ≥ 1")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	cmd := exec.CommandContext(ctx, self, "sink")
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("floor: start the sink: %w", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("floor: the sink's address: %w", err)
	}
	conns := make([]net.Conn, *sockets)
	for i := range conns {
		if conns[i], err = net.Dial("tcp", strings.TrimSpace(addr)); err != nil {
			return fmt.Errorf("floor: dial %d: %w", i, err)
		}
		defer conns[i].Close()
	}
	frame := make([]byte, floorFrame)
	inline := func(c net.Conn) error { _, err := c.Write(frame); return err }
	perFrame := func(c net.Conn) error {
		errc := make(chan error, 1)
		go func() {
			_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
			_, err := c.Write(frame)
			errc <- err
		}()
		return <-errc
	}
	parts := make([]string, 0, 2)
	for _, w := range []struct {
		name  string
		write func(net.Conn) error
	}{{"one goroutine writing", inline}, {"a goroutine and a write deadline per frame", perFrame}} {
		per, err := writeCPU(conns, *events, w.write)
		if err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		parts = append(parts, fmt.Sprintf("%s **%.2f µs**", w.name, per))
	}
	fmt.Fprintf(stdout, "Write floor (`bin/subsload floor --sockets %d --events %d`): CPU of the writing process per %d-byte frame to one of %d loopback TCP connections read by another process: %s.\n",
		*sockets, *events, floorFrame, *sockets, strings.Join(parts, ", "))
	return nil
}

// writeCPU is this process's CPU µs per frame while write sends events
// frames to every connection, a round at a time across all of them (as an
// event is fanned out).
func writeCPU(conns []net.Conn, events int, write func(net.Conn) error) (float64, error) {
	before, err := selfCPU()
	if err != nil {
		return 0, err
	}
	for range events {
		for _, c := range conns {
			if err := write(c); err != nil {
				return 0, err
			}
		}
	}
	after, err := selfCPU()
	if err != nil {
		return 0, err
	}
	return float64((after - before).Nanoseconds()) / 1e3 / float64(len(conns)*events), nil
}

func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// runSink accepts connections on a loopback port it prints, and reads and
// discards whatever they send, until killed.
func runSink(ctx context.Context, stdout io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	go func() { <-ctx.Done(); _ = ln.Close() }()
	fmt.Fprintln(stdout, ln.Addr().String())
	for {
		c, err := ln.Accept()
		if err != nil {
			return nil
		}
		go func() { _, _ = io.Copy(io.Discard, c) }()
	}
}
