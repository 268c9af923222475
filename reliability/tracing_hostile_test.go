package reliability

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testotlp"
)

// maxAttr bounds any exported attribute value: the gateway cuts each text of
// the client's to 256 bytes (modules/tracing/traceserver.go).
const maxAttr = 512

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// traceQuery posts a valid members query with key and the given headers
// (added, so a name may repeat) to path and returns the status.
func traceQuery(t *testing.T, c *http.Client, base, path, key string, headers [][2]string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(gqlBody("{ members(input: {limit: 1}) { items { member_id } } }")))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for _, h := range headers {
		req.Header.Add(h[0], h[1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %v: %v", path, headers, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// fromSource is the stack's client, connecting from the loopback address src.
func fromSource(s *stack.Stack, src string) *http.Client {
	tr := s.Client.Transport.(*http.Transport).Clone()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
	tr.DialContext = d.DialContext
	return &http.Client{Timeout: s.Client.Timeout, Transport: tr}
}

// hostileTraceHeaders are trace-context headers a client may send: malformed,
// oversized (under the 16 KB header limit), repeated.
func hostileTraceHeaders(valid string) map[string][][2]string {
	long := strings.Repeat("a", 12000)
	var members []string
	for i := range 600 {
		members = append(members, "k"+strconv.Itoa(i)+"=v"+strconv.Itoa(i))
	}
	many := strings.Join(members, ",")
	return map[string][][2]string{
		"traceparent garbage":       {{"traceparent", "garbage"}},
		"traceparent long":          {{"traceparent", long}},
		"traceparent zero ids":      {{"traceparent", "00-00000000000000000000000000000000-0000000000000000-01"}},
		"traceparent version ff":    {{"traceparent", "ff" + valid[2:]}},
		"traceparent upper case":    {{"traceparent", strings.ToUpper(valid)}},
		"traceparent future fields": {{"traceparent", "01" + valid[2:] + "-" + long[:4000]}},
		"traceparent non-ASCII":     {{"traceparent", "00-\xff\xfe" + valid[5:]}},
		"traceparent twice":         {{"traceparent", valid}, {"traceparent", valid}},
		"tracestate long":           {{"tracestate", "vendor=" + long}},
		"tracestate many":           {{"tracestate", many}},
		"tracestate invalid":        {{"tracestate", "=,=,==;;\xff"}},
		"baggage long":              {{"baggage", "k=" + long}},
		"baggage many":              {{"baggage", many}},
		"baggage invalid":           {{"baggage", "%%%;;;=,=\xff"}},
	}
}

// TestTracingHostile: the shipped gateway with tracing on (sampling 1 % of
// the traces it starts, one trusted peer 127.0.0.2) against hostile trace
// context: no header — malformed, oversized or repeated — gets anything but
// the normal answer; an untrusted client cannot force its requests to be
// recorded (a sampled flag on trace ids whose low bits are zero, which any
// ratio sampler keeps), while the trusted peer's trace is continued; no
// exported attribute holds the key (sent in the header, X-Api-Key, a cookie,
// the query, the path, the user agent, X-Forwarded-For) or runs long.
func TestTracingHostile(t *testing.T) {
	t.Parallel()
	r := testotlp.Start(t)
	s := stack.New(t, &bins)
	for k, v := range map[string]string{
		"CIVICGATE_TRACING": "on", "RECORDSD_TRACING": "on", "OTEL_EXPORTER_OTLP_ENDPOINT": r.Endpoint(),
		"OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.01",
		"CIVICGATE_TRACING_TRUST": "127.0.0.2", "CIVICGATE_CACHE": "off",
	} {
		s.Setenv(k, v)
	}
	s.Prepare()
	s.StartRecordsd()
	gw := s.StartGateway("caddyfile/Caddyfile.local")
	key, _ := s.IssueKey("org-trace-hostile", "enterprise", "live")
	untrusted, trusted := s.Client, fromSource(s, "127.0.0.2")

	// An untrusted client asking for every request to be recorded.
	forced := map[string]bool{}
	for range 20 {
		id := randomHex(t, 8) + "0000000000000000"
		forced[id] = true
		if st := traceQuery(t, untrusted, s.HTTPSURL, "/v1/graphql", key, [][2]string{{"traceparent", "00-" + id + "-" + randomHex(t, 8) + "-01"}}); st != http.StatusOK {
			t.Fatalf("forced sampling request: status %d", st)
		}
	}

	// Hostile headers from both kinds of peer; the trusted one's sent with a sampled parent (except when the
	// traceparent is the hostile part) so that its spans are exported and checked below.
	want := map[string]string{}  // trace id → what the trusted request was
	proxied := map[string]bool{} // trace ids of the trusted requests that reached recordsd
	for name, hs := range hostileTraceHeaders("00-" + randomHex(t, 16) + "-" + randomHex(t, 8) + "-01") {
		if st := traceQuery(t, untrusted, s.HTTPSURL, "/v1/graphql", key, hs); st != http.StatusOK {
			t.Errorf("untrusted, %s: status %d", name, st)
		}
		if !strings.HasPrefix(name, "traceparent") {
			id := randomHex(t, 16)
			want[id], proxied[id] = name, true
			hs = append(hs, [2]string{"traceparent", "00-" + id + "-" + randomHex(t, 8) + "-01"})
		}
		if st := traceQuery(t, trusted, s.HTTPSURL, "/v1/graphql", key, hs); st != http.StatusOK {
			t.Errorf("trusted, %s: status %d", name, st)
		}
	}

	// The key everywhere a client might put it, in recorded requests (trusted, sampled).
	secrets := []struct {
		name, path, auth string
		headers          [][2]string
		status           int
	}{
		{"authorization", "/v1/graphql", key, nil, http.StatusOK},
		{"x-api-key", "/v1/graphql", key, [][2]string{{"X-Api-Key", key}}, http.StatusOK},
		{"cookie", "/v1/graphql", key, [][2]string{{"Cookie", "session=" + key}}, http.StatusOK},
		{"user agent", "/v1/graphql", key, [][2]string{{"User-Agent", "client/1.0 " + key + " " + strings.Repeat("x", 2000)}}, http.StatusOK},
		{"forwarded for", "/v1/graphql", key, [][2]string{{"X-Forwarded-For", key + ", " + strings.Repeat("9", 3000)}}, http.StatusOK},
		{"query", "/v1/graphql?api_key=" + key, "", nil, http.StatusBadRequest},
		{"path", "/v1/graphql/" + key, "", nil, http.StatusBadRequest},
		{"bills path", "/bills/" + key + "/" + strings.Repeat("p", 3000), "", nil, http.StatusBadRequest},
	}
	for _, c := range secrets {
		id := randomHex(t, 16)
		want[id], proxied[id] = c.name, c.status == http.StatusOK
		hs := append(c.headers, [2]string{"traceparent", "00-" + id + "-" + randomHex(t, 8) + "-01"})
		if st := traceQuery(t, trusted, s.HTTPSURL, c.path, c.auth, hs); st != c.status {
			t.Errorf("key in %s: status %d, want %d", c.name, st, c.status)
		}
	}

	// Every trusted, sampled request is exported, recordsd's server span (which ends last) included for those
	// that reached it (the barrier: the untrusted requests ended before them).
	spans := r.WaitFor(t, 20*time.Second, func(spans []testotlp.Span) bool {
		seen, backend := map[string]bool{}, map[string]bool{}
		for _, sp := range spans {
			switch {
			case sp.Name == "gateway":
				seen[sp.TraceID] = true
			case sp.Service == "recordsd" && sp.Kind == "server":
				backend[sp.TraceID] = true
			}
		}
		for id := range want {
			if !seen[id] || proxied[id] && !backend[id] {
				return false
			}
		}
		return true
	})
	if gw.Exited() {
		t.Fatal("the gateway exited")
	}

	var forcedKept, forcedLinked int
	for _, sp := range spans {
		if forced[sp.TraceID] {
			forcedKept++
		}
		for _, l := range sp.Links {
			if forced[l.TraceID] {
				forcedLinked++
			}
		}
		if len(sp.Links) > 1 {
			t.Errorf("%s %q has %d links", sp.Service, sp.Name, len(sp.Links))
		}
		if sp.Name == "gateway" && want[sp.TraceID] != "" && sp.ParentSpanID == "" {
			t.Errorf("trusted request %q: the gateway did not continue its trace", want[sp.TraceID])
		}
		check := func(where, k, v string) {
			if strings.Contains(v, key) || strings.Contains(v, key[len(key)-20:]) {
				t.Errorf("%s %q %s %s holds the key", sp.Service, sp.Name, where, k)
			}
			if len(v) > maxAttr {
				t.Errorf("%s %q %s %s is %d bytes", sp.Service, sp.Name, where, k, len(v))
			}
		}
		for k, v := range sp.Attrs {
			check("attribute", k, v)
		}
		for _, l := range sp.Links {
			for k, v := range l.Attrs {
				check("link attribute", k, v)
			}
		}
		check("name", "", sp.Name)
		check("status", "", sp.StatusMessage)
	}
	if forcedKept != 0 {
		t.Errorf("%d spans continue an untrusted client's trace", forcedKept)
	}
	// Sampled by the gateway's own 1 %: 20 requests give more than 3 with odds below 1e-4.
	if forcedLinked > 3 {
		t.Errorf("%d of 20 forced requests were recorded at 1 %% sampling", forcedLinked)
	}
	s.CheckLogs(t, key)
}
