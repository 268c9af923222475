package reliability

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHostileCorpus sends every request of the abuse corpus (hostile_test.go)
// to the real gateway and checks the exact status and body; afterwards the
// gateway still serves, and no log holds a key, a panic or SQL.
func TestHostileCorpus(t *testing.T) {
	t.Parallel()
	e := start(t, 1)
	runCorpus(t, e)
	checkServes(t, e)
	e.s.CheckLogs(t, e.keys...)
	e.s.CheckLogs(t, e.free)
}

func runCorpus(t *testing.T, e *env) {
	keys := strings.NewReplacer("{{KEY}}", e.enterprise, "{{FREE}}", e.free, "{{KEYESC}}", jsonEscapeAll(e.enterprise),
		"{{FREEPCT}}", strings.ReplaceAll(e.free, "_", "%5F"))
	for _, h := range slices.Concat(corpus(), securityCorpus(), webhookTargetCorpus()) {
		t.Run(h.name, func(t *testing.T) {
			head := keys.Replace(h.head)
			if !strings.Contains(head, "\r\nHost:") {
				head += "\r\nHost: localhost"
			}
			head += "\r\nConnection: close"
			var body []byte
			if h.body != "" || h.gen != nil {
				if h.gen != nil {
					body = h.gen()
				} else {
					body = []byte(keys.Replace(h.body))
				}
				if !strings.Contains(head, "Content-Length:") && !strings.Contains(head, "chunked") {
					head += "\r\nContent-Length: " + itoa(len(body))
				}
			}
			head += "\r\n"
			within := h.within
			if within == 0 {
				within = 10 * time.Second
			}
			r, err := rawDo(e.s, head, body, h.stream, within)
			if err != nil {
				t.Fatalf("%s\nno answer: %v", h.why, err)
			}
			if r.status != h.status || r.body != h.want {
				t.Fatalf("%s\ngot  %d %s\nwant %d %s", h.why, r.status, r.body, h.status, h.want)
			}
			for k, v := range h.header {
				if got := r.header.Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			if strings.HasPrefix(h.want, "{") {
				if ct := r.header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q, want application/json", ct)
				}
				if r.header.Get("X-Request-Id") == "" {
					t.Error("no X-Request-Id")
				}
			}
			if strings.Contains(r.body, e.enterprise) || strings.Contains(r.body, e.free) {
				t.Error("the answer echoes a key")
			}
		})
	}
}

// checkServes asserts the gateway still answers a valid request.
func checkServes(t *testing.T, e *env) {
	t.Helper()
	c := validCalls(e.enterprise)[0]
	r := send(t.Context(), e.s.Client, e.s.HTTPSURL, &c)
	if r.status != 200 || !isGraphQLData(r.body) {
		t.Fatalf("after the corpus a valid request got %d %v %s", r.status, r.err, r.body)
	}
}
