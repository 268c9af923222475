package gqlcache

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/internal/redisconn"
	"github.com/civicgate/civicgate/internal/testkit/adapttest"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/contract"
)

// node is one gateway's cache instance (its own memory, generations and
// listener) with a handler, sharing Redis and the database with the others.
type node struct {
	name  string
	in    *instance
	h     *Handler
	calls atomic.Int64
	data  *atomic.Int64        // the records' version, shared by every node's upstream
	reg   *prometheus.Registry // where its Redis errors are counted
}

// newNode starts an instance listening on channel to the feed of dsn,
// sharing redisURL under prefix.
func newNode(t *testing.T, name, dsn, channel, redisURL, prefix string, data *atomic.Int64) *node {
	t.Helper()
	return newNodeTimeout(t, name, dsn, channel, redisURL, prefix, data, 2*time.Second)
}

// newNodeTimeout is newNode with its Redis calls bounded by timeout.
func newNodeTimeout(t *testing.T, name, dsn, channel, redisURL, prefix string, data *atomic.Int64, timeout time.Duration) *node {
	t.Helper()
	lc := &listenConfig{dsn: dsn, channel: channel, feed: "change_events"}
	in := newInstance(1<<20, 1<<16, lc)
	var reg *prometheus.Registry
	in.shared, reg = openTestShared(t, redisURL, prefix, timeout)
	in.start()
	t.Cleanup(func() { _ = in.Destruct() })
	await(t, in, name+" listens", in.up.Load)
	h := &Handler{inst: in, ttl: time.Minute, maxEntry: 1 << 16, now: time.Now,
		scope: []caddyopt.Template{caddyopt.ParseTemplate("{" + contract.CivicFamilies + "}")}}
	return &node{name: name, in: in, h: h, data: data, reg: reg}
}

// serve sends a query for doc, touching families, through the node.
func (n *node) serve(t *testing.T, doc, families string) (*httptest.ResponseRecorder, string) {
	t.Helper()
	w, outcome, err := n.serveOnce(doc, families)
	if err != nil {
		t.Fatal(err)
	}
	return w, outcome
}

// serveOnce is serve for any goroutine: the handler's error is returned.
func (n *node) serveOnce(doc, families string) (*httptest.ResponseRecorder, string, error) {
	req, repl, _ := request(doc, families)
	w := httptest.NewRecorder()
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		n.calls.Add(1)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, err := fmt.Fprintf(w, `{"data":{"doc":%q,"version":%d,"from":%q}}`, doc, n.data.Load(), n.name)
		return err
	})
	err := n.h.ServeHTTP(w, req, next)
	outcome, _ := repl.GetString(PlaceholderCache)
	return w, outcome, err
}

// request is the node tests' query for doc, touching families (comma-
// separated), as the guard decodes it, with civic_auth's placeholder set.
func request(doc, families string) (*http.Request, *caddy.Replacer, *contract.GraphQLRequest) {
	repl := caddy.NewReplacer()
	repl.Set(contract.CivicFamilies, "bills,members")
	decoded := q1Decoded
	decoded.Operation = contract.GraphQLOperation{Type: "query", Name: "Bill", DocumentHash: doc, Families: strings.Split(families, ",")}
	req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(q1))
	ctx := withDecoded(context.WithValue(req.Context(), caddy.ReplacerCtxKey, repl), decoded)
	return req.WithContext(ctx), repl, &decoded
}

// sharedKey is the Redis key of request(doc, families)'s entry on n.
func (n *node) sharedKey(t *testing.T, doc, families string) string {
	t.Helper()
	req, repl, decoded := request(doc, families)
	buf := getBuffer()
	defer putBuffer(buf)
	_, _, baseLen, refused := n.h.key(buf, req, repl, decoded, tagList{list: decoded.Operation.Families})
	if refused != "" {
		t.Fatal("no key:", refused)
	}
	return n.in.shared.key((*buf)[:baseLen])
}

func (n *node) sharedCount(t *testing.T, result string) float64 {
	return value(t, n.in.store.metrics.Load().sharedOps.WithLabelValues(result))
}

// awaitCursor waits until n's listener has processed the feed up to id.
func awaitCursor(t *testing.T, n *node, id int64) {
	t.Helper()
	await(t, n.in, fmt.Sprintf("%s processes feed id %d", n.name, id), func() bool { return n.in.shared.seen() >= id })
}

func wantStatus(t *testing.T, what string, w *httptest.ResponseRecorder, cacheStatus string) {
	t.Helper()
	if w.Code != http.StatusOK || w.Header().Get("Cache-Status") != cacheStatus {
		t.Fatalf("%s: %d %q, want 200 %q (body %s)", what, w.Code, w.Header().Get("Cache-Status"), cacheStatus, w.Body)
	}
}

const (
	sharedHitStatus = "civicgate; hit; ttl=60; detail=shared"
	storedStatus    = "civicgate; fwd=miss; stored"
)

// TestSharedHitAcrossInstances: what A stored, B (empty memory) answers
// from Redis byte for byte, then from its own memory.
func TestSharedHitAcrossInstances(t *testing.T) {
	dsn, _ := changeFeed(t)
	_, prefix := testenv.Redis(t)
	var data atomic.Int64
	redisURL := "redis://" + testenv.RedisAddr() + "/0"
	a := newNode(t, "A", dsn, DefaultChannel, redisURL, prefix, &data)
	b := newNode(t, "B", dsn, DefaultChannel, redisURL, prefix, &data)
	miss, _ := a.serve(t, "doc1", "bills")
	wantStatus(t, "A's miss", miss, storedStatus)
	hit, outcome := b.serve(t, "doc1", "bills")
	wantStatus(t, "B's shared hit", hit, sharedHitStatus)
	if outcome != "hit" || !bytes.Equal(hit.Body.Bytes(), miss.Body.Bytes()) || b.calls.Load() != 0 ||
		hit.Header().Get("Content-Type") != miss.Header().Get("Content-Type") || hit.Header().Get("Age") == "" {
		t.Fatalf("B: outcome %s, %d upstream calls, body %s (A's %s), headers %v", outcome, b.calls.Load(), hit.Body, miss.Body, hit.Header())
	}
	local, _ := b.serve(t, "doc1", "bills")
	wantStatus(t, "B's local hit", local, "civicgate; hit; ttl=60")
	if !bytes.Equal(local.Body.Bytes(), miss.Body.Bytes()) || b.sharedCount(t, sharedHit) != 1 || a.sharedCount(t, sharedStored) != 1 {
		t.Fatalf("B's local hit %s; shared hits %v, stores %v", local.Body, b.sharedCount(t, sharedHit), a.sharedCount(t, sharedStored))
	}
}

// TestSharedEntryRejectedAfterItsFamilyChanged: a members change that B
// has processed makes B refuse A's members entry (and fetch the fresh
// answer), not A's bills entry. And an entry A stores after the change but
// before A processes it (A's listener lags: here it never hears) is refused
// by B too: its seen is below the change's id.
func TestSharedEntryRejectedAfterItsFamilyChanged(t *testing.T) {
	dsn, conn := changeFeed(t)
	_, prefix := testenv.Redis(t)
	var data atomic.Int64
	data.Store(1)
	redisURL := "redis://" + testenv.RedisAddr() + "/0"
	a := newNode(t, "A", dsn, "nobody_notifies_a", redisURL, prefix, &data) // never processes a change
	b := newNode(t, "B", dsn, DefaultChannel, redisURL, prefix, &data)
	a.serve(t, "members-doc", "members")
	a.serve(t, "bills-doc", "bills")
	data.Store(2)
	change(t, conn, "members") // id 1
	awaitCursor(t, b, 1)
	fresh, _ := b.serve(t, "members-doc", "members")
	wantStatus(t, "B, members after the change", fresh, storedStatus)
	if !strings.Contains(fresh.Body.String(), `"version":2,"from":"B"`) || b.sharedCount(t, sharedRejected) != 1 {
		t.Fatalf("B served %s (rejected %v)", fresh.Body, b.sharedCount(t, sharedRejected))
	}
	bills, _ := b.serve(t, "bills-doc", "bills")
	wantStatus(t, "B, bills after a members change", bills, sharedHitStatus)

	// A, which has not processed id 1, reads members data as of before it
	// (its seen is 0) for another query: B refuses that entry.
	data.Store(1)
	stale, _ := a.serve(t, "members-doc2", "members")
	wantStatus(t, "A's lagging miss", stale, storedStatus)
	if a.in.shared.seen() != 0 {
		t.Fatalf("A's cursor %d, want 0 (A must not have processed the change)", a.in.shared.seen())
	}
	data.Store(2)
	again, _ := b.serve(t, "members-doc2", "members")
	wantStatus(t, "B, A's lagging entry", again, storedStatus)
	if !strings.Contains(again.Body.String(), `"version":2,"from":"B"`) {
		t.Fatalf("B served %s", again.Body)
	}
	// B's entry, stored with seen 1, is good for a third instance.
	c := newNode(t, "C", dsn, DefaultChannel, redisURL, prefix, &data)
	if w, _ := c.serve(t, "members-doc2", "members"); w.Header().Get("Cache-Status") != sharedHitStatus || w.Body.String() != again.Body.String() {
		t.Fatalf("C: %q %s", w.Header().Get("Cache-Status"), w.Body)
	}
}

// TestSharedRedisDown: with its Redis killed, a node answers every request
// (misses, no 5xx, from memory when it can) and counts the errors.
func TestSharedRedisDown(t *testing.T) {
	dsn, _ := changeFeed(t)
	srv := testenv.StartRedisServer(t)
	var data atomic.Int64
	a := newNode(t, "A", dsn, DefaultChannel, srv.URL(), "cache:", &data)
	b := newNode(t, "B", dsn, DefaultChannel, srv.URL(), "cache:", &data)
	a.serve(t, "doc1", "bills")
	srv.Kill()
	reported := b.redisErrors(t) // the counter is the process's (no other test runs now)
	if w, _ := a.serve(t, "doc1", "bills"); w.Header().Get("Cache-Status") != "civicgate; hit; ttl=60" {
		t.Fatalf("A's local hit with Redis down: %q", w.Header().Get("Cache-Status"))
	}
	for _, doc := range []string{"doc1", "doc2"} {
		w, outcome := b.serve(t, doc, "bills")
		if w.Code != http.StatusOK || outcome != "miss" || !strings.Contains(w.Body.String(), `"from":"B"`) {
			t.Fatalf("B with Redis down, %s: %d %s %q %s", doc, w.Code, outcome, w.Header().Get("Cache-Status"), w.Body)
		}
	}
	if n, reported := b.sharedCount(t, sharedError), b.redisErrors(t)-reported; n != 2 || reported != 2 {
		t.Fatalf("%v shared errors counted, %v reported, want 2 (the gets; nothing is set after a failed get)", n, reported)
	}
	if w, _ := b.serve(t, "doc2", "bills"); w.Header().Get("Cache-Status") != "civicgate; hit; ttl=60" {
		t.Fatalf("B's memory with Redis down: %q", w.Header().Get("Cache-Status"))
	}
}

// TestSharedListenerDown: a node whose listener is down serves no shared
// hit; when it listens again, entries from before its new cursor are
// refused (a change it may have missed).
func TestSharedListenerDown(t *testing.T) {
	dsn, conn := changeFeed(t)
	_, prefix := testenv.Redis(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewProxy(t, u.Host)
	u.Host = proxy.Addr()
	var data atomic.Int64
	redisURL := "redis://" + testenv.RedisAddr() + "/0"
	a := newNode(t, "A", dsn, "nobody_notifies_a", redisURL, prefix, &data)
	b := newNode(t, "B", u.String(), DefaultChannel, redisURL, prefix, &data)
	a.serve(t, "doc1", "bills")
	proxy.Cut()
	await(t, b.in, "B's listener is down", func() bool { return !b.in.up.Load() })
	w, outcome := b.serve(t, "doc1", "bills")
	if outcome != "stale-refused" || w.Header().Get("Cache-Status") != "civicgate; fwd=miss; detail=invalidation-down" || b.calls.Load() != 1 {
		t.Fatalf("B with its listener down: %s %q, %d calls", outcome, w.Header().Get("Cache-Status"), b.calls.Load())
	}
	change(t, conn, "members") // while B does not listen
	proxy.Restore()
	await(t, b.in, "B listens again", b.in.up.Load)
	if w, _ := b.serve(t, "doc1", "bills"); w.Header().Get("Cache-Status") != storedStatus {
		t.Fatalf("B after reconnecting, an entry stored before its cursor: %q", w.Header().Get("Cache-Status"))
	}
}

// TestSharedPurgeAndUndecodable: a purge bumps the epoch (every earlier
// shared entry is ignored); a value that does not decode is a counted miss.
func TestSharedPurgeAndUndecodable(t *testing.T) {
	dsn, _ := changeFeed(t)
	client, prefix := testenv.Redis(t)
	var data atomic.Int64
	redisURL := "redis://" + testenv.RedisAddr() + "/0"
	a := newNode(t, "A", dsn, DefaultChannel, redisURL, prefix, &data)
	b := newNode(t, "B", dsn, DefaultChannel, redisURL, prefix, &data)
	a.serve(t, "doc1", "bills")
	if err := a.in.shared.purge(); err != nil {
		t.Fatal(err)
	}
	if w, _ := b.serve(t, "doc1", "bills"); w.Header().Get("Cache-Status") != storedStatus {
		t.Fatalf("B after a purge: %q", w.Header().Get("Cache-Status"))
	}
	keys, err := client.Keys(context.Background(), prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.HasSuffix(k, "purge-epoch") {
			client.Set(context.Background(), k, "\x01garbage", time.Minute)
		}
	}
	a.in.store.flush()
	if w, _ := a.serve(t, "doc1", "bills"); w.Header().Get("Cache-Status") != storedStatus || a.sharedCount(t, sharedUndecodable) != 1 {
		t.Fatalf("A on an undecodable value: %q, %v counted", w.Header().Get("Cache-Status"), a.sharedCount(t, sharedUndecodable))
	}
	b.in.store.flush()
	if w, _ := b.serve(t, "doc1", "bills"); w.Header().Get("Cache-Status") != sharedHitStatus {
		t.Fatalf("B after A overwrote the bad value: %q", w.Header().Get("Cache-Status"))
	}
}

func TestSharedEnvelopeRoundTrip(t *testing.T) {
	se := &sharedEntry{status: 200, ctype: "application/json", body: []byte(`{"data":1}`), tags: []string{"bills"},
		surrogate: []string{"bill:1", "bill:2"}, seen: 42, epoch: 3, stored: time.Unix(0, 1234567), ttl: time.Minute,
		vary: []string{"Accept"}, varySum: [32]byte{1, 2, 3}}
	b := encodeEnvelope(se)
	got, err := decodeEnvelope(b)
	if err != nil || fmt.Sprint(*got) != fmt.Sprint(*se) {
		t.Fatalf("round trip: %v %+v", err, got)
	}
	for i := range len(b) {
		if _, err := decodeEnvelope(b[:i]); err == nil {
			t.Fatalf("a value cut at %d of %d decoded", i, len(b))
		}
	}
}

func TestSharedConfigRefused(t *testing.T) {
	redis := "shared redis {env.REDIS_URL}"
	feed := "invalidate postgres {env.DATABASE_URL} {\nfeed change_events\n}\n"
	adapttest.Refused(t, map[string]adapttest.Refusal{
		"no invalidate":  {globalCfg(redis), "graphql_cache: shared redis needs invalidate postgres <dsn> { feed <table> }"},
		"no feed":        {globalCfg("invalidate postgres {env.DATABASE_URL}\n" + redis), "without a change feed there is no global order"},
		"kind":           {globalCfg("shared memcached x"), `graphql_cache: shared: want redis [<url>], got "memcached"`},
		"no kind":        {globalCfg("shared"), "wrong argument count"},
		"no url":         {globalCfg(feed + "shared redis"), "graphql_cache: shared: want redis <url> or a block with addrs"},
		"unknown option": {globalCfg(redis + " {\nttl 1s\n}"), `graphql_cache shared: unknown option "ttl"`},
		"timeout":        {globalCfg(redis + " {\ntimeout 0s\n}"), `graphql_cache shared: timeout: want a duration above zero, got "0s"`},
		"two urls":       {globalCfg(redis + " redis://b"), "wrong argument count"},
		"mode":           {globalCfg(redis + " {\nmode ring\n}"), `graphql_cache shared: mode: want standalone, cluster or sentinel, got "ring"`},
		"prefix twice":   {globalCfg(redis + " {\nkey_prefix a\nkey_prefix b\n}"), "graphql_cache shared: key_prefix given twice"},
	})
	adapttest.Adapts(t, globalCfg(feed+redis+" {\nkey_prefix gw:\ntimeout 20ms\n}"))
	adapttest.Adapts(t, globalCfg(feed+"shared redis {\naddrs 10.0.0.1:6379 10.0.0.2:6379\nmode cluster\nusername gw\n"+
		"password {env.REDIS_PASSWORD}\ntls {\nca /etc/redis/ca.pem\n}\nkey_prefix gw:\n}"))
	for name, lc := range map[string]*listenConfig{"none": nil, "no feed": {dsn: "x", channel: "c"}} {
		a := &App{Shared: &SharedConfig{Config: redisconn.Config{URL: "redis://127.0.0.1:6379"}}}
		if _, err := a.sharedOptions(lc); err == nil || !strings.Contains(err.Error(), "needs `invalidate postgres") {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for _, bad := range []string{"redis://:hunter2@[bad", "redis://u:hunter2@h:6379/0?nope=1", "http://u:hunter2@h/"} {
		a := &App{Shared: &SharedConfig{Config: redisconn.Config{URL: bad}}}
		if _, err := a.sharedOptions(&listenConfig{feed: "f"}); err == nil || strings.Contains(err.Error(), "hunter2") ||
			!strings.HasPrefix(err.Error(), "graphql_cache: shared redis") {
			t.Fatalf("a bad URL: %v", err)
		}
	}
}
