package otherbackend

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// response is an answer of the gateway.
type response struct {
	Status int
	Header http.Header
	Body   string
}

// postJSON sends body (any JSON value) to url with the key as a bearer token.
func postJSON(t *testing.T, url, key string, body any) response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return send(t, req, key)
}

// send sends req with the key (when not empty) as a bearer token.
func send(t *testing.T, req *http.Request, key string) response {
	t.Helper()
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, string(b)}
}
