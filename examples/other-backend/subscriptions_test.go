package otherbackend

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	graphql "github.com/hasura/go-graphql-client"

	"github.com/civicgate/civicgate/examples/other-backend/libraryclient"
	"github.com/civicgate/civicgate/modules/contract"
)

// TestSubscriptionsThroughTheGateway: a loanEvents subscription through the
// gateway, over graphql-transport-ws and over graphql-sse, receives the
// events of mutations made through the gateway; the engine never sees the key
// (the harness checks everything it received when the test ends, upgrade
// request, connection_init and subscribe frames included).
func TestSubscriptionsThroughTheGateway(t *testing.T) {
	g := newGateway(t, keysInFile)
	partner, _ := g.issue("county-archive", "partner")
	reader, _ := g.issue("city-school", "reader")
	g.start()
	ctx := context.Background()
	c := libraryclient.NewHTTP(g.URL, partner)

	t.Run("WebSocket", func(t *testing.T) {
		sub, err := libraryclient.SubscribeLoanEvents(g.WSURL, partner)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		g.awaitSubscribed(t, sub, 1)
		loan, err := c.Borrow(ctx, "b1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Return(ctx, loan.ID); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"BORROWED", "RETURNED"} {
			select {
			case ev := <-sub.Events:
				if ev.Kind != want || ev.Loan.ID != loan.ID || ev.Loan.Book.Title != "Middlemarch" {
					t.Fatalf("event %+v, want %s of %s", ev, want, loan.ID)
				}
			case err := <-sub.Errors:
				t.Fatal(err)
			case err := <-sub.Done:
				t.Fatalf("socket closed: %v", err)
			case <-time.After(10 * time.Second):
				t.Fatalf("no %s event", want)
			}
		}
		ups := g.Upstream.upgrades()
		if len(ups) == 0 {
			t.Fatal("the engine received no WebSocket upgrade")
		}
		claims, err := contract.VerifyIdentity(g.Secret, ups[len(ups)-1].Header.Get("X-Civic-Identity"), time.Now())
		if err != nil || claims.Tier != "partner" {
			t.Fatalf("upgrade identity %+v %v", claims, err)
		}
		if g.Upstream.initCount() == 0 {
			t.Fatal("the engine received no connection_init")
		}
		if g.Upstream.operationsWith("loanEvents") == 0 {
			t.Fatal("the engine received no loanEvents subscribe")
		}
		if err := sub.Close(); err != nil {
			t.Fatal(err)
		}
		g.awaitSubscribers(t, 0) // the next subtests count from zero
	})
	t.Run("WebSocket subscribe outside the tier is refused, the socket stays open", func(t *testing.T) {
		before := g.Upstream.operationsWith("loanEvents")
		sub, err := libraryclient.SubscribeLoanEvents(g.WSURL, reader)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		select {
		case err := <-sub.Errors:
			var errs graphql.Errors
			if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Message != `Cannot query field "loanEvents" on type "Subscription".` || errs[0].Extensions["code"] != "GRAPHQL_VALIDATION_FAILED" {
				t.Fatalf("refusal %v", err)
			}
		case err := <-sub.Done:
			t.Fatalf("socket closed instead of an error message: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("no refusal")
		}
		select {
		case err := <-sub.Done:
			t.Fatalf("socket closed after the refusal: %v", err)
		default:
		}
		if g.Upstream.operationsWith("loanEvents") != before {
			t.Fatal("a refused subscription reached the engine")
		}
	})
	t.Run("graphql-sse", func(t *testing.T) {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second) // bounds stream.Next
		defer cancel()
		stream, err := libraryclient.PostSSE(sctx, g.URL, partner, `subscription { loanEvents { kind loan { id book { title } } } }`)
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		if ct := stream.Response.Header.Get("Content-Type"); stream.Response.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("%d %s", stream.Response.StatusCode, ct)
		}
		g.awaitSubscribers(t, 1)
		loan, err := c.Borrow(ctx, "b4")
		if err != nil {
			t.Fatal(err)
		}
		ev, err := stream.Next()
		want := `{"data":{"loanEvents":{"kind":"BORROWED","loan":{"id":"` + loan.ID + `","book":{"title":"Invisible Cities"}}}}}`
		if err != nil || ev.Event != "next" || ev.Data != want {
			t.Fatalf("%+v %v", ev, err)
		}
		cancel()
		g.awaitSubscribers(t, 0)
	})
	t.Run("graphql-sse outside the tier is refused", func(t *testing.T) {
		stream, err := libraryclient.PostSSE(ctx, g.URL, reader, `subscription { loanEvents { kind } }`)
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		body, _ := io.ReadAll(stream.Response.Body)
		if stream.Response.StatusCode != http.StatusOK || !strings.Contains(string(body), `"Cannot query field \"loanEvents\" on type \"Subscription\"."`) {
			t.Fatalf("%d %s", stream.Response.StatusCode, body)
		}
	})
	t.Run("subscription over a plain POST is refused", func(t *testing.T) {
		r := postJSON(t, g.URL, partner, map[string]string{"query": `subscription { loanEvents { kind } }`})
		if r.Status != 200 || !strings.Contains(r.Body, `"code":"OPERATION_NOT_ALLOWED"`) {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
}
