package contract

import (
	"net/http"
	"strconv"
)

// JSON is a set of headers written with a JSON response besides
// Content-Type: application/json. Each writer keeps the headers it has always
// sent: a constant like `const out = contract.WithContentLength` and then
// out.Write(w, status, body).
type JSON uint8

const (
	// WithContentLength sets Content-Length to the body's length
	// (civic_rate_limit, graphql_guard).
	WithContentLength JSON = 1 << iota
	// WithNoSniff sets X-Content-Type-Options: nosniff (recordsd).
	WithNoSniff
	// WithNoStore sets Cache-Control: no-store (the webhook API).
	WithNoStore
	// WithSharedValues puts shared, read-only value slices in the header map
	// instead of a new slice per header: the fixed headers then cost no
	// allocation (civic_auth's refusals). A handler that later edits header
	// values in place would edit every response's.
	WithSharedValues
)

// Shared header values of WithSharedValues. Read-only; each has capacity 1,
// so an Add elsewhere copies instead of writing into it.
var (
	sharedJSON    = []string{"application/json"}
	sharedNoSniff = []string{"nosniff"}
	sharedNoStore = []string{"no-store"}
)

// Write sends status and body with Content-Type: application/json and the
// headers of j. Header names are set in canonical form, replacing any value
// already set.
func (j JSON) Write(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	j.set(h, "Content-Type", "application/json", sharedJSON)
	if j&WithNoSniff != 0 {
		j.set(h, "X-Content-Type-Options", "nosniff", sharedNoSniff)
	}
	if j&WithNoStore != 0 {
		j.set(h, "Cache-Control", "no-store", sharedNoStore)
	}
	if j&WithContentLength != 0 {
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (j JSON) set(h http.Header, key, value string, shared []string) {
	if j&WithSharedValues != 0 {
		h[key] = shared
		return
	}
	h[key] = []string{value}
}

// WriteJSON sends status and body with Content-Type: application/json and
// no other header.
func WriteJSON(w http.ResponseWriter, status int, body []byte) {
	JSON(0).Write(w, status, body)
}
