package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/stack"

	graphql "github.com/hasura/go-graphql-client"
)

// gql is a typed client for the gateway with a key.
func gql(s *stack.Stack, key string) *graphql.Client {
	return graphql.NewClient(s.HTTPSURL+"/v1/graphql", s.Client).WithRequestModifier(func(r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+key)
	})
}

// filterCase runs a filtered query and checks that the record it was built
// from is among the results and that every result satisfies the filter.
func checkFilter[T any](t *testing.T, name string, items []T, want func(T) bool, isProbe func(T) bool) {
	t.Helper()
	if len(items) == 0 {
		t.Fatalf("%s: no results", name)
	}
	found := false
	for _, it := range items {
		if !want(it) {
			t.Fatalf("%s: result does not satisfy the filter: %+v", name, it)
		}
		if isProbe(it) {
			found = true
		}
	}
	if !found {
		t.Fatalf("%s: the record the filter was built from is missing", name)
	}
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func containsFold(list []string, sub string) bool {
	for _, x := range list {
		if strings.Contains(strings.ToLower(x), strings.ToLower(sub)) {
			return true
		}
	}
	return false
}

// do sends a raw request to the gateway.
func do(t *testing.T, s *stack.Stack, method, path, key, contentType string, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.HTTPSURL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}
