package main

// The engine: the example library engine (examples/other-backend/library) in
// a child process of its own (`subsload engine`), so that its ends of 10 000
// sockets do not count against the client process's open-files limit. It
// timestamps each event immediately before it publishes it and answers how
// many subscriptions it holds — the number of upstream subscriptions a proxy
// made.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/civicgate/civicgate/examples/other-backend/library"
)

const (
	publishPath     = "/subsload/publish"
	subscribersPath = "/subsload/subscribers"
)

// runEngine serves the engine on --listen until ctx ends: /graphql, and the
// control endpoints POST /subsload/publish?id=… (answers the publish time,
// UnixNano) and GET /subsload/subscribers.
func runEngine(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("subsload engine", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:18291", "address of /graphql and the control endpoints")
	if err := fs.Parse(args); err != nil {
		return err
	}
	events := library.NewLoanEvents()
	mux := http.NewServeMux()
	mux.Handle("/graphql", library.NewHandler(library.NewCatalog(), events, library.Options{KeepAlive: time.Minute}))
	mux.HandleFunc("POST "+publishPath, func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		if id == "" {
			http.Error(w, "want ?id=", http.StatusBadRequest)
			return
		}
		ev := &library.LoanEvent{Kind: library.LoanEventKindBorrowed,
			Loan: &library.Loan{ID: id, MemberID: "m1", BookID: "b1", Due: "2026-12-01"}}
		at := time.Now().UnixNano()
		events.Publish(ev)
		fmt.Fprint(w, at)
	})
	mux.HandleFunc("GET "+subscribersPath, func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, events.Subscribers())
	})
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("engine listen: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("engine: %w", err)
	}
	return nil
}

// engineProc is the engine child as the client process drives it.
type engineProc struct {
	base string // http://addr
	cmd  *exec.Cmd
	hc   *http.Client
}

// startEngine starts `subsload engine --listen addr` (this executable) and
// waits until it answers; the child ends with its parent.
func startEngine(ctx context.Context, addr string, stderr io.Writer) (*engineProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	cmd := exec.CommandContext(ctx, self, "engine", "--listen", addr)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e := &engineProc{base: "http://" + addr, cmd: cmd, hc: &http.Client{Timeout: 60 * time.Second}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := e.subscribers(); err == nil {
			return e, nil
		} else if time.Now().After(deadline) {
			e.stop()
			return nil, fmt.Errorf("engine did not answer on %s: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *engineProc) pid() int { return e.cmd.Process.Pid }

func (e *engineProc) stop() {
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	_ = e.cmd.Wait()
}

func (e *engineProc) call(method, path string) (int64, error) {
	req, err := http.NewRequest(method, e.base+path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s %s: HTTP %d", method, path, resp.StatusCode)
	}
	return strconv.ParseInt(strings.TrimSpace(string(body)), 10, 64)
}

// publish publishes one event whose loan id is id and returns when the engine
// published it (UnixNano, the engine's clock: the same host's).
func (e *engineProc) publish(id string) (int64, error) {
	return e.call(http.MethodPost, publishPath+"?id="+id)
}

func (e *engineProc) subscribers() (int, error) {
	n, err := e.call(http.MethodGet, subscribersPath)
	return int(n), err
}
