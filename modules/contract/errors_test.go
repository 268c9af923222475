package contract

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// errorBodies and messageBodies pair each pre-encoded body with its message.
func errorBodies() map[string][]byte {
	return map[string][]byte{
		MsgMissingBearer: BodyMissingBearer, MsgMalformedHeader: BodyMalformedHeader, MsgInvalidKey: BodyInvalidKey,
		MsgKeyRevoked: BodyKeyRevoked, MsgKeyRotated: BodyKeyRotated, MsgKeyExpired: BodyKeyExpired, MsgWrongEnvironment: BodyWrongEnvironment,
		MsgOrgSuspended: BodyOrgSuspended, MsgNotEntitled: BodyNotEntitled, MsgRateLimited: BodyRateLimited,
		MsgInternal: BodyInternal, MsgNotFound: BodyNotFound, MsgMethodNotAllowed: BodyMethodNotAllowed,
		MsgMisdirected: BodyMisdirected, MsgBadGateway: BodyBadGateway, MsgGatewayTimeout: BodyGatewayTimeout,
	}
}

func messageBodies() map[string][]byte {
	return map[string][]byte{MsgKeyInURL: BodyKeyInURL, MsgBodyTooLarge: BodyTooLarge}
}

// marshalNoEscape is encoding/json with HTML escaping off, the oracle.
func marshalNoEscape(t testing.TB, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

type errorShape struct {
	Error string `json:"error"`
}

type message struct {
	Message string `json:"message"`
}

type messagesShape struct {
	Errors []message `json:"errors"`
}

// TestBodies: every pre-encoded body is its message in its form, byte for
// byte as encoding/json writes it, and has not been modified.
func TestBodies(t *testing.T) {
	for msg, body := range errorBodies() {
		if want := marshalNoEscape(t, errorShape{msg}); !bytes.Equal(body, want) || !bytes.Equal(ErrorBody(msg), want) {
			t.Errorf("%q: body %s, ErrorBody %s, want %s", msg, body, ErrorBody(msg), want)
		}
	}
	for msg, body := range messageBodies() {
		if want := marshalNoEscape(t, messagesShape{[]message{{msg}}}); !bytes.Equal(body, want) || !bytes.Equal(MessageBody(msg), want) {
			t.Errorf("%q: body %s, MessageBody %s, want %s", msg, body, MessageBody(msg), want)
		}
	}
}

// TestBodiesAreDocumented: docs/api.md "Errors" lists every body verbatim.
func TestBodiesAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, bodies := range []map[string][]byte{errorBodies(), messageBodies()} {
		for _, body := range bodies {
			if !bytes.Contains(doc, append(append([]byte("`"), body...), '`')) {
				t.Errorf("docs/api.md does not list %s", body)
			}
		}
	}
}

// TestCaddyfileBodiesAreTheContract: the bodies the shipped Caddyfiles write
// themselves (respond, handle_errors) are the contract's.
func TestCaddyfileBodiesAreTheContract(t *testing.T) {
	var known [][]byte
	for _, bodies := range []map[string][]byte{errorBodies(), messageBodies()} {
		for _, b := range bodies {
			known = append(known, b)
		}
	}
	respond := regexp.MustCompile("respond `([^`]*)`")
	found := 0
	for _, f := range []string{"routes.caddy", "misdirected.caddy"} {
		b, err := os.ReadFile("../../caddyfile/" + f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range respond.FindAllSubmatch(b, -1) {
			found++
			if !slices.ContainsFunc(known, func(k []byte) bool { return bytes.Equal(k, m[1]) }) {
				t.Errorf("caddyfile/%s responds %s, not a body of the contract", f, m[1])
			}
		}
	}
	if found < 5 {
		t.Fatalf("found %d respond bodies; the Caddyfiles changed shape", found)
	}
}

// FuzzMessageBody: the builders write exactly what encoding/json writes for
// the same shapes, whatever the message (quotes, control characters, invalid
// UTF-8, U+2028, <, > and &).
func FuzzMessageBody(f *testing.F) {
	for _, s := range []string{"", "Use GET", `unknown parameter "<x>"`, "a & b", "\x00\x1f\u2028\u2029", "\xff\xfe", `\u003c`, "\t\n\r\b\f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		if got, want := MessageBody(msg), marshalNoEscape(t, messagesShape{[]message{{msg}}}); !bytes.Equal(got, want) {
			t.Fatalf("MessageBody(%q) = %s, want %s", msg, got, want)
		}
		want, err := json.Marshal(messagesShape{[]message{{msg}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := MessageBodyHTMLEscaped(msg); !bytes.Equal(got, want) {
			t.Fatalf("MessageBodyHTMLEscaped(%q) = %s, want %s", msg, got, want)
		}
		if got, want := ErrorBody(msg), marshalNoEscape(t, errorShape{msg}); !bytes.Equal(got, want) {
			t.Fatalf("ErrorBody(%q) = %s, want %s", msg, got, want)
		}
	})
}

// TestWriteHeaders: each writer sends exactly its headers, the status and the
// body.
func TestWriteHeaders(t *testing.T) {
	body := BodyNotFound
	for _, tc := range []struct {
		name string
		j    JSONWriter
		want http.Header
	}{
		{"plain", JSONWriter{}, http.Header{"Content-Type": {"application/json"}}},
		{"content length", JSONWriter{ContentLength: true}, http.Header{"Content-Type": {"application/json"}, "Content-Length": {"21"}}},
		{"nosniff", JSONWriter{NoSniff: true}, http.Header{"Content-Type": {"application/json"}, "X-Content-Type-Options": {"nosniff"}}},
		{"no-store", JSONWriter{NoStore: true}, http.Header{"Content-Type": {"application/json"}, "Cache-Control": {"no-store"}}},
		{"shared", JSONWriter{SharedValues: true, NoSniff: true, NoStore: true}, http.Header{"Content-Type": {"application/json"},
			"X-Content-Type-Options": {"nosniff"}, "Cache-Control": {"no-store"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			w.Header().Set("Content-Type", "text/html") // replaced
			tc.j.Write(w, http.StatusNotFound, body)
			if w.Code != http.StatusNotFound || w.Body.String() != string(body) {
				t.Fatalf("%d %q", w.Code, w.Body.String())
			}
			if got := w.Result().Header; !headersEqual(got, tc.want) {
				t.Fatalf("headers %v, want %v", got, tc.want)
			}
		})
	}
	w := httptest.NewRecorder()
	WriteJSON(w, http.StatusTeapot, body)
	if w.Code != http.StatusTeapot || w.Body.String() != string(body) || !headersEqual(w.Result().Header, http.Header{"Content-Type": {"application/json"}}) {
		t.Fatalf("WriteJSON: %d %q %v", w.Code, w.Body.String(), w.Result().Header)
	}
}

func headersEqual(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// TestSharedValuesDoNotAllocate: civic_auth's refusals write with
// SharedValues and must not allocate; an Add after it must not write into
// the shared values.
func TestSharedValuesDoNotAllocate(t *testing.T) {
	w := &discard{h: http.Header{}}
	if n := testing.AllocsPerRun(100, func() { JSONWriter{SharedValues: true}.Write(w, http.StatusUnauthorized, BodyInvalidKey) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
	w.h.Add("Content-Type", "text/plain")
	w2 := &discard{h: http.Header{}}
	JSONWriter{SharedValues: true}.Write(w2, http.StatusUnauthorized, BodyInvalidKey)
	if got := strings.Join(w2.h.Values("Content-Type"), ","); got != "application/json" {
		t.Fatalf("shared Content-Type became %q", got)
	}
}
