package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
)

// apolloExchange is one HTTP exchange of apollo.mjs's fetch.
type apolloExchange struct {
	Method string `json:"method"`
	Query  string `json:"query"` // the document text sent, "" when only a hash
	Hash   string `json:"hash"`
	Status int    `json:"status"`
}

// apolloResult is one operation's outcome in apollo.mjs.
type apolloResult struct {
	Data      json.RawMessage  `json:"data"`
	Error     *clientError     `json:"error"`
	Exchanges []apolloExchange `json:"exchanges"`
}

// clientError is what a client library surfaced of a failure
// (common.mjs describeError).
type clientError struct {
	Name       string            `json:"name"`
	Message    string            `json:"message"`
	StatusCode int               `json:"statusCode"`
	BodyText   string            `json:"bodyText"`
	Errors     []json.RawMessage `json:"errors"`
	Code       int               `json:"code"`
	Reason     string            `json:"reason"`
}

// apolloOp is one operation of apollo.mjs: apq "", "POST" or "GET".
type apolloOp struct {
	Query     string         `json:"query"`
	Variables map[string]any `json:"variables,omitempty"`
	APQ       string         `json:"apq,omitempty"`
}

// runApollo runs apollo.mjs against url with bearer.
func runApollo(t *testing.T, dir, caRoot, url, bearer string, ops ...apolloOp) []apolloResult {
	t.Helper()
	var out struct {
		Results []apolloResult `json:"results"`
	}
	raw := runNPMScript(t, dir, caRoot, "apollo.mjs", bearer, map[string]any{"url": url, "operations": ops}, &out)
	if len(out.Results) != len(ops) {
		t.Fatalf("apollo.mjs: %d results for %d operations: %s", len(out.Results), len(ops), raw)
	}
	return out.Results
}

// sentText is the document text the client sent last (Apollo adds
// __typename to every selection set): the Go request of the same operation
// sends exactly it.
func (r apolloResult) sentText(t *testing.T) string {
	t.Helper()
	for i := len(r.Exchanges) - 1; i >= 0; i-- {
		if r.Exchanges[i].Query != "" {
			return r.Exchanges[i].Query
		}
	}
	t.Fatalf("Apollo sent no document text: %+v", r.Exchanges)
	return ""
}

// wantApolloData fails unless r holds data equal to a Go POST of the same
// document and variables to url with bearer through client.
func wantApolloData(t *testing.T, what string, r apolloResult, client *http.Client, url, bearer string, vars map[string]any) {
	t.Helper()
	if r.Error != nil || len(r.Data) == 0 || string(r.Data) == "null" {
		t.Fatalf("%s: Apollo surfaced %+v, data %s; exchanges %+v", what, r.Error, r.Data, r.Exchanges)
	}
	st, want := postGraphQL(t, client, url, bearer, r.sentText(t), vars)
	if st != http.StatusOK || len(want.Errors) != 0 {
		t.Fatalf("%s: the Go request: %d %s", what, st, want.Errors)
	}
	if !sameJSON(r.Data, want.Data) {
		t.Errorf("%s: Apollo's data %s\nthe Go request's %s", what, r.Data, want.Data)
	}
}

// exchangeShape is an exchange without the document text and hash value:
// method, whether each was sent, status.
type exchangeShape struct {
	Method        string
	Query, Hashed bool
	Status        int
}

func shapes(xs []apolloExchange) []exchangeShape {
	out := make([]exchangeShape, 0, len(xs))
	for _, x := range xs {
		out = append(out, exchangeShape{x.Method, x.Query != "", x.Hash != "", x.Status})
	}
	return out
}
