package httpapi_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/backend/httpapi"
	"github.com/civicgate/civicgate/backend/records"
)

// FuzzBillsQuery sends arbitrary query strings to GET /bills on a real database: only 200 or 400 may come
// back (never a 500, never a panic).
func FuzzBillsQuery(f *testing.F) {
	for _, s := range []string{"", "congress=118", "congress=118&type=hr&q=H.R.%202882&limit=5", "limit=0", "limit=101",
		"limit=-1", "congress=99999999999999999999", "cursor=eyJrIjpbIngiXX0", "q=%27%3B%20DROP%20TABLE%20bills", "q=%00",
		"q=!!!%20%7C%20%26", "q=%22unterminated", "type=%25", "a=1&a=2", "%zz", "q=hr2882&q=s1", "congress=+1", "limit=1e2"} {
		f.Add(s)
	}
	e := newEnv(f, envOpts{})
	e.seedFixtures()
	f.Fuzz(func(t *testing.T, raw string) {
		req, err := http.NewRequest(http.MethodGet, e.srv.URL+"/bills", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.RawQuery = raw
		req.Header.Set("X-Civic-Identity", token(t))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return // the client refused to send it
		}
		resp.Body.Close()
		if resp.StatusCode != 200 && resp.StatusCode != 400 {
			t.Fatalf("GET /bills?%s = %d", raw, resp.StatusCode)
		}
	})
}

// FuzzParseBillsQuery: the parser never panics and only ever returns InputErrors.
func FuzzParseBillsQuery(f *testing.F) {
	f.Add("congress=118&limit=5")
	f.Add("limit=abc")
	f.Add("x=1")
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		in, err := httpapi.ParseBillsQuery(v)
		var ie *records.InputError
		if err != nil && !errors.As(err, &ie) {
			t.Fatalf("non-input error %v", err)
		}
		if err == nil && in.Limit != nil && (*in.Limit < 1 || *in.Limit > 100) {
			t.Fatalf("limit %d accepted", *in.Limit)
		}
	})
}

// FuzzGraphQLBody posts arbitrary bodies to POST /graphql on a real database (with seeded bills, so
// filters, text search and cursors reach PostgreSQL): the answer is always one of the §3.6 client answers
// (200, 400, 413), JSON, and never the 500 of a server fault — whatever a client sends is either served or
// refused as its own mistake.
func FuzzGraphQLBody(f *testing.F) {
	for _, s := range []string{
		`{"query":"{ bills(input:{limit:2}) { items { id } nextCursor } }"}`,
		`{"query":"query($in: BillsInput) { bills(input:$in) { nextCursor } }","variables":{"in":{"q":"H.R. 2882 & !x","congress":118}}}`,
		`{"query":"{ bills(input:{q:\"'; DROP TABLE bills --\"}) { nextCursor } }"}`,
		`{"query":"{ bills(input:{cursor:\"eyJrIjpbIngiXX0\"}) { nextCursor } }"}`,
		`{"query":"{ members(input:{chamber:\"house\",congress:118,state:\"WA\"}) { items { name terms { party } } } }"}`,
		`{"query":"{ federalBudgets(input:{dataset:OUTLAYS,month:\"2024-13\"}) { nextCursor } }"}`,
		`{"query":"{ regulatoryFilings(input:{rIN:\"\\u0000\"}) { nextCursor } }"}`,
		`{"query":"{ lobbyingDisclosures(input:{limit:2147483648}) { nextCursor } }"}`,
		`{"query":"{ bill(id:\"hr2882-118\") { id memberByCongressKey } }"}`,
		`{"query":"query A { __typename } query B { bills { nextCursor } }","operationName":"B"}`,
		`{"query":"{ bills { nextCursor } }","variables":[]}`,
		`{"query":"{ bills(input:{q:\"\\\"unterminated\"}) { nextCursor } }"}`,
		`{}`, `[]`, `null`, `{"query":1}`,
	} {
		f.Add(s)
	}
	e := newEnv(f, envOpts{})
	e.seedFixtures()
	f.Fuzz(func(t *testing.T, body string) {
		req, err := http.NewRequest(http.MethodPost, e.srv.URL+"/graphql", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Civic-Identity", token(t))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST /graphql: %v", err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		switch resp.StatusCode {
		case 200, 400, 413:
		default:
			t.Fatalf("POST /graphql %q = %d %s", body, resp.StatusCode, b)
		}
		if !json.Valid(b) {
			t.Fatalf("POST /graphql %q: body is not JSON: %q", body, b)
		}
	})
}
