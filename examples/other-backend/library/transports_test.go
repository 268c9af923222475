package library_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/civicgate/civicgate/examples/other-backend/library"
	"github.com/civicgate/civicgate/examples/other-backend/libraryclient"
	"github.com/civicgate/civicgate/modules/contract"
)

const borrowed = `{"data":{"loanEvents":{"kind":"BORROWED","loan":{"id":"l1","book":{"title":"Middlemarch"}}}}}`

func TestWebSocketSubscription(t *testing.T) {
	inits := make(chan transport.InitPayload, 1)
	e := startEngine(t, library.Options{OnInit: func(_ context.Context, p transport.InitPayload) { inits <- p }})
	sub, err := libraryclient.SubscribeLoanEvents("ws"+strings.TrimPrefix(e.URL, "http"), "k1")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	awaitSubscribers(t, e.Events, 1)
	if p := <-inits; p["client"] != "libraryclient" {
		t.Fatalf("connection_init payload %v", p)
	}
	c := libraryclient.NewHTTP(e.URL, "")
	loan, err := c.Borrow(context.Background(), "b1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Return(context.Background(), loan.ID); err != nil {
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
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s event", want)
		}
	}
}

func TestSSESubscription(t *testing.T) {
	e := startEngine(t, library.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // bounds stream.Next
	defer cancel()
	stream, err := libraryclient.PostSSE(ctx, e.URL, "", `subscription { loanEvents { kind loan { id book { title } } } }`)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if ct := stream.Response.Header.Get("Content-Type"); stream.Response.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("%d %s", stream.Response.StatusCode, ct)
	}
	awaitSubscribers(t, e.Events, 1)
	if _, err := libraryclient.NewHTTP(e.URL, "").Borrow(ctx, "b1"); err != nil {
		t.Fatal(err)
	}
	ev, err := stream.Next()
	if err != nil || ev.Event != "next" || ev.Data != borrowed {
		t.Fatalf("%+v %v", ev, err)
	}
	cancel()
	awaitSubscribers(t, e.Events, 0)
}

func TestGETQueryAndGraphQLResponseJSON(t *testing.T) {
	e := startEngine(t, library.Options{})
	req, _ := http.NewRequest(http.MethodGet, e.URL+"?query="+url.QueryEscape(`{ book(id: "b4") { title author { name } } }`), nil)
	req.Header.Set("Accept", "application/graphql-response+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/graphql-response+json" ||
		string(b) != `{"data":{"book":{"title":"Invisible Cities","author":{"name":"Italo Calvino"}}}}` {
		t.Fatalf("%d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
}

func TestDeferOverMultipartMixed(t *testing.T) {
	e := startEngine(t, library.Options{})
	body := `{"query":"{ book(id: \"b1\") { title ... @defer { author { name } } } }"}`
	req, _ := http.NewRequest(http.MethodPost, e.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", `multipart/mixed;deferSpec=20220824`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "multipart/mixed") ||
		!strings.Contains(string(b), `"hasNext":true`) || !strings.Contains(string(b), `George Eliot`) {
		t.Fatalf("%d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
}

func TestNoAutomaticPersistedQueries(t *testing.T) {
	e := startEngine(t, library.Options{})
	body := `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"ecf4edb46db40b5132295c0291d62fb65d6759a9eedfa4d5d612dd5ec54a6b38"}}}`
	resp, err := http.Post(e.URL, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(b), "PersistedQueryNotFound") || !strings.Contains(string(b), `"errors"`) {
		t.Fatalf("the engine answers APQ itself: %s", b)
	}
}

func TestIdentityRequired(t *testing.T) {
	secret := []byte(strings.Repeat("s", 32))
	ops := make(chan *graphql.OperationContext, 1)
	e := startEngine(t, library.Options{IdentitySecret: secret, OnOperation: func(ctx context.Context, op *graphql.OperationContext) {
		if c := library.CallerOf(ctx); c == nil || c.Org != "county-archive" {
			t.Errorf("caller %+v", c)
		}
		ops <- op
	}})
	post := func(identity string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, e.URL, strings.NewReader(`{"query":"{ authors { name } }"}`))
		req.Header.Set("Content-Type", "application/json")
		if identity != "" {
			req.Header.Set("X-Civic-Identity", identity)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := post(""); status != http.StatusUnauthorized {
		t.Fatalf("no identity: %d %s", status, body)
	}
	token, err := contract.SignIdentity(secret, contract.Caller{KeyID: "key_1", Org: "county-archive", Tier: "partner"}, time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	status, body := post(token)
	var out struct {
		Data struct{ Authors []struct{ Name string } }
	}
	if status != 200 || json.Unmarshal([]byte(body), &out) != nil || len(out.Data.Authors) != 3 {
		t.Fatalf("with identity: %d %s", status, body)
	}
	if op := <-ops; op.RawQuery != "{ authors { name } }" {
		t.Fatalf("engine received %q", op.RawQuery)
	}
}
