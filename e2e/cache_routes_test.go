package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// TestCacheOnTheShippedRoutes: a repeated query is a hit byte-identical to
// the miss; a sync that renames a member is seen by both gateways (no
// gateway serves the old name once it has served the new one, and none
// serves it for long: the time is logged, its bound is measured by
// BenchmarkCacheStaleness); a free caller never gets the paid tier's entry;
// a hit still costs quota, up to a 429; an answer with errors is not stored;
// /bills is cached too.
func TestCacheOnTheShippedRoutes(t *testing.T) {
	t.Parallel()
	a := stack.New(t, &bins)
	a.Prepare()
	a.StartRecordsd()
	a.Run(bins.Recordsd, "sync", "members", "--file", writeLegislators(t, "Ada Example"))
	a.StartGateway("caddyfile/Caddyfile.local")
	b := stack.New(t, &bins)
	shareServices(b, a)
	b.StartGateway("caddyfile/Caddyfile.local")
	paid, _ := a.IssueKey("cachepaid", "paid_beta", "live")

	miss := send(t, a, "POST", "/v1/graphql", paid, cacheMembersDoc)
	hit := send(t, a, "POST", "/v1/graphql", paid, cacheMembersDoc)
	if miss.status != 200 || !strings.Contains(miss.body, "Ada Example") || !strings.Contains(miss.header.Get("Cache-Status"), "fwd=miss") {
		t.Fatalf("first answer: %d %q %s", miss.status, miss.header.Get("Cache-Status"), miss.body)
	}
	if hit.status != 200 || hit.body != miss.body || hit.header.Get("Content-Type") != miss.header.Get("Content-Type") ||
		!strings.HasPrefix(hit.header.Get("Cache-Status"), "civicgate; hit") || hit.header.Get("Age") == "" {
		t.Fatalf("second answer is not a byte-identical hit: %d %q age %q\n%s\n%s", hit.status, hit.header.Get("Cache-Status"),
			hit.header.Get("Age"), hit.body, miss.body)
	}
	if hit.header.Get("RateLimit") == miss.header.Get("RateLimit") {
		t.Errorf("a hit did not spend quota: RateLimit %q both times", hit.header.Get("RateLimit"))
	}
	if x := send(t, b, "POST", "/v1/graphql", paid, cacheMembersDoc); x.body != miss.body {
		t.Fatalf("gateway b answers differently: %s", x.body)
	}
	// A real client library (go-graphql-client) gets the same members from
	// the cache as from a fresh fetch, twice in a row.
	for i := range 2 {
		var q struct {
			Members struct {
				Items []struct {
					BioguideID string `graphql:"bioguide_id"`
					Name       string
				}
			} `graphql:"members(input: {state: \"WA\", limit: 50})"`
		}
		if err := gql(a, paid).Query(context.Background(), &q, nil); err != nil {
			t.Fatalf("go-graphql-client query %d: %v", i, err)
		}
		found := false
		for _, m := range q.Members.Items {
			found = found || (m.BioguideID == "Z999001" && m.Name == "Ada Example")
		}
		if !found {
			t.Fatalf("go-graphql-client query %d: %+v", i, q.Members.Items)
		}
	}

	// A sync commits a new name: every gateway drops its members entries.
	a.Run(bins.Recordsd, "sync", "members", "--file", writeLegislators(t, "Ada Renamed"))
	committed := time.Now()
	for _, s := range []*stack.Stack{a, b} {
		seenNew := false
		stack.WaitFor(t, 10*time.Second, "the renamed member through "+s.HTTPSURL, func() error {
			x := send(t, s, "POST", "/v1/graphql", paid, cacheMembersDoc)
			switch {
			case strings.Contains(x.body, "Ada Renamed"):
				seenNew = true
				return nil
			case seenNew:
				t.Fatalf("%s served the old name after the new one", s.HTTPSURL)
			}
			return errStillOld
		})
		t.Logf("%s serves the new name %s after the sync returned", s.HTTPSURL, time.Since(committed).Round(time.Millisecond))
		for range 3 {
			if x := send(t, s, "POST", "/v1/graphql", paid, cacheMembersDoc); !strings.Contains(x.body, "Ada Renamed") {
				t.Fatalf("%s went back to the old name: %s", s.HTTPSURL, x.body)
			}
		}
	}

	// Scope: the free tier's families differ, so its first answer is a miss.
	free, _ := a.IssueKey("cachefree", "free", "live")
	if x := send(t, a, "POST", "/v1/graphql", free, cacheMembersDoc); !strings.Contains(x.header.Get("Cache-Status"), "fwd=miss") {
		t.Fatalf("a free caller was served the paid tier's entry: %q", x.header.Get("Cache-Status"))
	}
	// Hits cost quota like any answer: the free key's 30/min ends in a 429.
	refused := false
	for i := 0; i < 40 && !refused; i++ {
		x := send(t, a, "POST", "/v1/graphql", free, cacheMembersDoc)
		switch x.status {
		case 429:
			refused = true
		case 200:
			if !strings.HasPrefix(x.header.Get("Cache-Status"), "civicgate; hit") {
				t.Fatalf("repeat %d was not a hit: %q", i, x.header.Get("Cache-Status"))
			}
		default:
			t.Fatalf("repeat %d: %d %s", i, x.status, x.body)
		}
	}
	if !refused {
		t.Fatal("40 hits of a free (30/min) key were never refused")
	}

	// An answer with errors is never stored.
	for i := range 2 {
		x := send(t, b, "POST", "/v1/graphql", paid, cacheBadDoc)
		if !strings.Contains(x.body, `"errors"`) || strings.HasPrefix(x.header.Get("Cache-Status"), "civicgate; hit") {
			t.Fatalf("errors answer %d: %q %s", i, x.header.Get("Cache-Status"), x.body)
		}
	}
	// /bills is cached under the bills tag.
	first := send(t, b, "GET", "/bills?limit=2", paid, "")
	again := send(t, b, "GET", "/bills?limit=2", paid, "")
	if first.status != 200 || again.body != first.body || !strings.HasPrefix(again.header.Get("Cache-Status"), "civicgate; hit") {
		t.Fatalf("/bills: %d %q", again.status, again.header.Get("Cache-Status"))
	}
	a.CheckLogs(t, paid, free)
	b.CheckLogs(t, paid, free)
}

type stillOld struct{}

func (stillOld) Error() string { return "still the old name" }

var errStillOld error = stillOld{}
