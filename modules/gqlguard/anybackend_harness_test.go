package gqlguard

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Helpers of anybackend_integration_test.go: graphql_guard in front of a
// GraphQL backend that is not the records service (testdata/library.graphqls).

// libraryEcho answers with what the next handler saw: the operation type,
// root fields and families the guard published, the URL query and the body.
const libraryEcho = `respond "type={graphql.operation_type} roots={graphql.root_fields} families={graphql.families} query={http.request.uri.query} body={http.request.body}" 200`

// libraryFamilies: catalog by bare root field names, loans across the three
// root types; Mutation.returnBook is in no family on purpose.
const libraryFamilies = `
			family catalog books book
			family loans loans Mutation.borrowBook Subscription.loanEvents`

// shelfQuery is the one document of testdata/manifest.json.
const shelfQuery = `query Shelf { books(first: 3) { nodes { title author } } }`

// echoed is libraryEcho's answer.
func echoed(typ, roots, families, query, body string) string {
	return "type=" + typ + " roots=" + roots + " families=" + families + " query=" + query + " body=" + body
}

func testdataPath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func librarySHA256(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// apqExt is the extensions member of an APQ request.
func apqExt(hash string, version int) string {
	return `"extensions":{"persistedQuery":{"version":` + jsonNumber(version) + `,"sha256Hash":"` + hash + `"}}`
}

func jsonNumber(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// expect fails unless the response has the status and exactly the body.
func expect(t *testing.T, what string, resp *http.Response, body string, status int, want string) {
	t.Helper()
	if resp.StatusCode != status || body != want {
		t.Fatalf("%s: got %d %s\nwant %d %s", what, resp.StatusCode, body, status, want)
	}
}

// streamUpstream is a backend that streams parts, flushing each: it writes
// the first part, then waits until the test says the client has read it
// (release) before it writes the others, and reports whether it had to give
// up waiting (the gateway buffered the first part).
type streamUpstream struct {
	contentType string
	first, rest string
	release     chan struct{}
	done        chan struct{} // closed once the last part is written
	mu          sync.Mutex
	gaveUp      bool
	gotBody     string
	gotAccept   string
}

func startStreamUpstream(t *testing.T, contentType, first, rest string) (*streamUpstream, string) {
	t.Helper()
	u := &streamUpstream{contentType: contentType, first: first, rest: rest,
		release: make(chan struct{}), done: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(srv.Close)
	return u, strings.TrimPrefix(srv.URL, "http://")
}

func (u *streamUpstream) serve(w http.ResponseWriter, r *http.Request) {
	defer close(u.done)
	b := new(strings.Builder)
	_, _ = bufio.NewReader(r.Body).WriteTo(b)
	u.mu.Lock()
	u.gotBody, u.gotAccept = b.String(), r.Header.Get("Accept")
	u.mu.Unlock()
	w.Header().Set("Content-Type", u.contentType)
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	_, _ = w.Write([]byte(u.first))
	f.Flush()
	select {
	case <-u.release:
	case <-time.After(15 * time.Second):
		u.mu.Lock()
		u.gaveUp = true
		u.mu.Unlock()
	}
	_, _ = w.Write([]byte(u.rest))
	f.Flush()
}

func (u *streamUpstream) seen() (body, accept string, gaveUp bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.gotBody, u.gotAccept, u.gaveUp
}

// readUntil reads from r until the text read so far contains marker, in a
// goroutine, and fails the test when marker does not arrive within the
// deadline or before the stream ends.
func readUntil(t *testing.T, r *bufio.Reader, marker string, deadline time.Duration) string {
	t.Helper()
	type result struct {
		text string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		var sb strings.Builder
		for !strings.Contains(sb.String(), marker) {
			b, err := r.ReadByte()
			if err != nil {
				got <- result{sb.String(), err}
				return
			}
			sb.WriteByte(b)
		}
		got <- result{sb.String(), nil}
	}()
	select {
	case res := <-got:
		if res.err != nil {
			t.Fatalf("stream ended (%v) before %q; read %q", res.err, marker, res.text)
		}
		return res.text
	case <-time.After(deadline):
		t.Fatalf("%q did not arrive within %s", marker, deadline)
		return ""
	}
}
