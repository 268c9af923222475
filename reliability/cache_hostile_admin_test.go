package reliability

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

func (c *cacheEnv) requestHeaders(t *testing.T) {
	doc := q(`{ members(input:{state:"WA", limit:7}) { items { name } } }`, "")
	// no-store: forwarded, not stored.
	for i := range 2 {
		wantCache(t, fmt.Sprintf("no-store %d", i), c.gql(t, c.ent, doc, "Cache-Control", "no-store"), 200, csBypassNS)
	}
	first := c.gql(t, c.ent, doc)
	wantCache(t, "after no-store", first, 200, csStored)
	// no-cache: forwarded, the fresh answer stored; the next is a hit.
	nc := c.gql(t, c.ent, doc, "Cache-Control", "no-cache")
	wantCache(t, "no-cache", nc, 200, csRequest)
	hit := c.gql(t, c.ent, doc)
	wantCache(t, "after no-cache", hit, 200, "hit")
	if hit.body != nc.body || nc.body != first.body {
		t.Fatalf("no-cache answers differ:\n%s\n%s", hit.body, nc.body)
	}
	// Garbage directives are ignored; an unreadable max-age is max-age=0
	// (RFC 9111 4.2.1: an invalid freshness is stale), i.e. no-cache.
	for _, cc := range []string{`}{;;,,=,"`, "garbage, no-storeX, no_cache, private=", strings.Repeat("a,", 2000)} {
		r := c.gql(t, c.ent, doc, "Cache-Control", cc)
		wantCache(t, fmt.Sprintf("Cache-Control %.20q", cc), r, 200, "hit")
		if r.body != nc.body {
			t.Fatalf("garbage Cache-Control: another body %s", r.body)
		}
	}
	wantCache(t, "max-age=banana", c.gql(t, c.ent, doc, "Cache-Control", "max-age=banana"), 200, csRequest)
	// Pragma: no-cache without Cache-Control is no-cache (Go's server turns
	// it into Cache-Control: no-cache, as RFC 7234 5.4 asked): forwarded,
	// the fresh answer stored.
	pr := c.gql(t, c.ent, doc, "Pragma", "no-cache")
	wantCache(t, "Pragma: no-cache", pr, 200, csRequest)
	if pr.body != nc.body {
		t.Fatalf("Pragma: no-cache: another body %s", pr.body)
	}
	wantCache(t, "after Pragma: no-cache", c.gql(t, c.ent, doc), 200, "hit")
	// With a Cache-Control of its own, Pragma is ignored.
	wantCache(t, "Pragma with Cache-Control", c.gql(t, c.ent, doc, "Pragma", "no-cache", "Cache-Control", "max-age=60"), 200, "hit")
	// If-None-Match of any shape: the hit has no validator, so the full 200.
	for _, inm := range []string{"*", `"` + strings.Repeat("\"x", 3000) + `"`, `W/"` + first.h.Get("Age") + `", *, ""`} {
		r := c.gql(t, c.ent, doc, "If-None-Match", inm)
		wantCache(t, fmt.Sprintf("If-None-Match %.20q", inm), r, 200, "hit")
		if r.body != nc.body {
			t.Fatalf("If-None-Match: another body %s", r.body)
		}
	}
	// Streams pass through untouched: no Cache-Status, never the entry.
	for _, h := range [][]string{{"Accept", "text/event-stream"}, {"Accept", "application/json, text/event-stream;q=0.9"}, {"Upgrade", "websocket"}} {
		r := c.gql(t, c.ent, doc, h...)
		if len(r.h.Values("Cache-Status")) != 0 || r.h.Get("Age") != "" || r.status != 200 || !isGraphQLData(r.body) {
			t.Fatalf("%s: %s, want the upstream's 200 without Cache-Status nor Age", h, r)
		}
	}
}

// purge sends a request to the admin purge endpoint.
func (c *cacheEnv) purge(t *testing.T, method, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.admin+"/graphql-cache/purge", rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("purge: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func (c *cacheEnv) adminPurge(t *testing.T) {
	members := q(`{ members(input:{state:"WA", limit:8}) { items { name } } }`, "")
	c.fresh(t, "members before purges", c.ent, members)
	bills := "/bills?limit=2"
	wantCache(t, "bills first", c.do(t, "GET", bills, c.ent, ""), 200, csStored)
	wantCache(t, "bills repeat", c.do(t, "GET", bills, c.ent, ""), 200, "hit")

	var many strings.Builder
	many.WriteString(`{"tags":[`)
	for i := range 100_000 {
		if i > 0 {
			many.WriteByte(',')
		}
		fmt.Fprintf(&many, `"t%d"`, i)
	}
	many.WriteString(`]}`)
	hostile := []struct {
		name, method, body string
		status             int
		says               string // in the error
	}{
		{"empty body", "POST", "", 400, "purge request"},
		{"not JSON", "POST", "purge everything please", 400, "purge request"},
		{"tags a string", "POST", `{"tags":"bills"}`, 400, "purge request"},
		{"tags empty", "POST", `{"tags":[]}`, 400, `give either \"tags\"`},
		{"tags and all", "POST", `{"tags":["bills"],"all":true}`, 400, `give either \"tags\"`},
		{"all a string", "POST", `{"all":"yes"}`, 400, "purge request"},
		{"all false", "POST", `{"all":false}`, 400, `give either \"tags\"`},
		{"unknown member", "POST", `{"tag":["bills"]}`, 400, "unknown field"},
		{"trailing data", "POST", `{"all":true} {"all":true}`, 400, "trailing data"},
		{"tag with a comma", "POST", `{"tags":["bills,members"]}`, 400, "without commas"},
		{"tag with NUL", "POST", `{"tags":["members\u0000"]}`, 400, "control"},
		{"tag with CR LF", "POST", `{"tags":["members\r\n"]}`, 400, "control"},
		{"tag with a space", "POST", `{"tags":["members X"]}`, 400, "spaces"},
		{"tag with a tab", "POST", `{"tags":["members\t"]}`, 400, "control"},
		{"tag with DEL", "POST", `{"tags":["members\u007f"]}`, 400, "control"},
		{"over 1 MiB", "POST", `{"tags":["` + strings.Repeat("a", 1<<20) + `"]}`, 400, "larger than 1 MiB"},
		{"GET", "GET", "", 405, "use POST"},
		{"PUT", "PUT", `{"all":true}`, 405, "use POST"},
		{"DELETE", "DELETE", "", 405, "use POST"},
		// 100 000 well-formed tags naming nothing cached: accepted, and the
		// entries of other tags stay.
		{"100 000 tags", "POST", many.String(), 200, `{"purged_tags":100000}`},
	}
	for _, h := range hostile {
		status, body := c.purge(t, h.method, h.body)
		if status != h.status || !strings.Contains(body, h.says) {
			t.Errorf("purge %s: %d %.300s, want %d containing %q", h.name, status, body, h.status, h.says)
		}
		if status == 400 && !strings.HasPrefix(body, `{"error":`) {
			t.Errorf("purge %s: the error is not JSON: %.300s", h.name, body)
		}
	}
	// Nothing above touched the members or bills entries.
	wantCache(t, "members after hostile purges", c.gql(t, c.ent, members), 200, "hit")
	wantCache(t, "bills after hostile purges", c.do(t, "GET", bills, c.ent, ""), 200, "hit")

	// A valid purge by tag: the members entry goes, the bills entry stays.
	if status, body := c.purge(t, "POST", `{"tags":["members"]}`); status != 200 || body != `{"purged_tags":1}` {
		t.Fatalf("purge members: %d %s", status, body)
	}
	wantCache(t, "members after its purge", c.gql(t, c.ent, members), 200, csStored)
	wantCache(t, "members again", c.gql(t, c.ent, members), 200, "hit")
	wantCache(t, "bills after the members purge", c.do(t, "GET", bills, c.ent, ""), 200, "hit")
	if status, body := c.purge(t, "POST", `{"all":true}`); status != 200 || !strings.HasPrefix(body, `{"purged_tags":`) {
		t.Fatalf("purge all: %d %s", status, body)
	}
	wantCache(t, "bills after purging all", c.do(t, "GET", bills, c.ent, ""), 200, csStored)
	wantCache(t, "members after purging all", c.gql(t, c.ent, members), 200, csStored)
}

func (c *cacheEnv) listenerLoss(t *testing.T) {
	doc := q(`{ members(input:{state:"WA", limit:50}) { items { bioguide_id name } } }`, "")
	before := c.fresh(t, "members before the cut", c.ent, doc)
	if !strings.Contains(before.body, "Round0 Member0") {
		t.Fatalf("the synced members are not in the answer: %s", before.body)
	}
	c.pg.Cut()
	cut := time.Now()
	stack.WaitFor(t, 10*time.Second, "answers without the cache", func() error {
		r := c.gql(t, c.ent, doc)
		switch {
		// Until the listener notices the cut it is up, and the cache serves
		// and stores as usual: an entry gone meanwhile (an earlier sync's
		// invalidation heard late) is stored again. Whatever it stores then
		// goes with the flush the listener makes when it notices.
		case r.status == 200 && (r.hit() || r.cs() == csStored):
			return fmt.Errorf("still up: %s", r)
		case r.status != 200 || r.cs() != csDown:
			t.Fatalf("after the cut: %s, want a hit or 200 %q", r, csDown)
		}
		return nil
	})
	t.Logf("listener down %s after the cut", time.Since(cut).Round(time.Millisecond))
	if up := c.metric(t, "civicgate_graphql_cache_listener_up"); up != 0 {
		t.Fatalf("listener_up %v while PostgreSQL is cut off", up)
	}
	// A change committed while the gateway cannot hear it: every answer is
	// fresh, none is stored.
	c.s.Run(bins.Recordsd, "sync", "members", "--file", cacheLegislators(t, 1))
	for i := range 3 {
		r := c.gql(t, c.ent, doc)
		wantCache(t, fmt.Sprintf("while down, %d", i), r, 200, csDown)
		if !strings.Contains(r.body, "Round1 Member0") || strings.Contains(r.body, "Round0") {
			t.Fatalf("while down, %d: not the committed data: %s", i, r.body)
		}
	}
	nc := c.gql(t, c.ent, doc, "Cache-Control", "no-cache")
	wantCache(t, "no-cache while down", nc, 200, csDown)

	c.pg.Restore()
	restored := time.Now()
	stack.WaitFor(t, 15*time.Second, "the listener back", func() error {
		r := c.gql(t, c.ent, doc)
		if !strings.Contains(r.body, "Round1 Member0") {
			t.Fatalf("after the restore: old data %s", r)
		}
		switch {
		case r.cs() == csDown:
			return fmt.Errorf("still %q", r.cs())
		case r.status != 200 || r.cs() != csStored:
			t.Fatalf("first answer after the restore: %s, want 200 %q", r, csStored)
		}
		return nil
	})
	t.Logf("listening again %s after the restore", time.Since(restored).Round(time.Millisecond))
	hit := c.gql(t, c.ent, doc)
	wantCache(t, "after the restore", hit, 200, "hit")
	if tr := c.truth(t, c.ent, doc); tr.body != hit.body {
		t.Fatalf("hit after the restore is not the truth:\n%s\n%s", hit.body, tr.body)
	}
	// The listener hears changes again.
	c.s.Run(bins.Recordsd, "sync", "members", "--file", cacheLegislators(t, 2))
	stack.WaitFor(t, 10*time.Second, "the next change through the listener", func() error {
		r := c.gql(t, c.ent, doc)
		if r.status != 200 || !strings.Contains(r.body, "Round2 Member0") {
			return fmt.Errorf("not yet: %s", r)
		}
		return nil
	})
}

func (c *cacheEnv) metric(t *testing.T, name string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	v, err := c.s.GatewayMetric(ctx, name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

func (c *cacheEnv) logs(t *testing.T) {
	c.s.CheckLogs(t, c.ent, c.paid, c.free, c.freeRL, c.freeCost, c.suspended, c.revoked)
	c.noDSN(t)
}
