package httpapi

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// echoBody answers with the request body, its length declared, after reading it whole.
func echoBody(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header()["Content-Length"] = []string{strconv.Itoa(len(b))}
	_, _ = w.Write(b)
}

// TestOneWriteExpectContinue: a client that sends Expect: 100-continue and waits for the interim response
// before its body gets it at once (it was held with the response, which waits for the body: neither came), then
// the whole answer; the next ordinary response on the connection still leaves in one write.
func TestOneWriteExpectContinue(t *testing.T) {
	cl, conn, br := serveOneWrite(t, http.HandlerFunc(echoBody))
	body := strings.Repeat("0123456789", 700)
	if _, err := io.WriteString(conn, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: "+strconv.Itoa(len(body))+
		"\r\nExpect: 100-continue\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// Far above the microseconds it takes: without the interim response this read never completes.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for _, want := range []string{"HTTP/1.1 100 Continue\r\n", "\r\n"} {
		line, err := br.ReadString('\n')
		if err != nil || line != want {
			t.Fatalf("before sending the body: read %q, %v; want %q", line, err, want)
		}
	}
	if _, err := io.WriteString(conn, body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || string(got) != body {
		t.Fatalf("answer: status %d, %d bytes (want %d), %v", resp.StatusCode, len(got), len(body), err)
	}
	cl.take()
	_ = conn.SetReadDeadline(time.Time{})
	if _, err := io.WriteString(conn, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"); err != nil {
		t.Fatal(err)
	}
	if resp, err = http.ReadResponse(br, nil); err != nil {
		t.Fatal(err)
	}
	if got, err = io.ReadAll(resp.Body); err != nil || string(got) != "hello" {
		t.Fatalf("ordinary request after it: %q, %v", got, err)
	}
	if w := cl.take(); len(w) != 1 {
		t.Errorf("ordinary request after it: %d writes %v, want one", len(w), w)
	}
}

// TestOneWriteExpectContinueHTTPClient: Go's http.Client, as curl does for a large body, sends Expect:
// 100-continue and holds the body until the interim response or ExpectContinueTimeout; the interim response
// must come first, not after the timeout gave up on it.
func TestOneWriteExpectContinueHTTPClient(t *testing.T) {
	base, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: oneWrite(http.HandlerFunc(echoBody))}
	ln := ConfigureServer(srv, base)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	tr := &http.Transport{ExpectContinueTimeout: 10 * time.Second} // far above normal: only a lost 100 reaches it
	t.Cleanup(tr.CloseIdleConnections)

	var got100, bodyBefore100 atomic.Bool
	trace := &httptrace.ClientTrace{Got100Continue: func() { got100.Store(true) }}
	payload := strings.Repeat("abcdefghij", 2000)
	body := &firstRead{Reader: strings.NewReader(payload), onFirst: func() { bodyBefore100.Store(!got100.Load()) }}
	ctx, cancel := context.WithTimeout(httptrace.WithClientTrace(context.Background(), trace), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+base.Addr().String()+"/echo", body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(payload))
	req.Header.Set("Expect", "100-continue")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || string(got) != payload {
		t.Fatalf("answer: status %d, %d bytes (want %d), %v", resp.StatusCode, len(got), len(payload), err)
	}
	if !got100.Load() || bodyBefore100.Load() {
		t.Errorf("the body left before the 100 Continue arrived (got 100: %v): the client waited out ExpectContinueTimeout", got100.Load())
	}
}

// firstRead calls onFirst before its first Read.
type firstRead struct {
	io.Reader
	onFirst func()
	read    bool
}

func (f *firstRead) Read(p []byte) (int, error) {
	if !f.read {
		f.read = true
		f.onFirst()
	}
	return f.Reader.Read(p)
}
