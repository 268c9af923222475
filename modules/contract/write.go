package contract

import (
	"net/http"
	"strconv"
)

// JSONWriter writes a JSON response: Content-Type: application/json and the
// extra headers its fields turn on. Each writer keeps the headers it has
// always sent by holding one JSONWriter value (modules/contract/README.md
// "Error bodies and the writer").
type JSONWriter struct {
	// ContentLength sets Content-Length to the body's length
	// (civic_rate_limit, graphql_guard).
	ContentLength bool
	// NoSniff sets X-Content-Type-Options: nosniff (recordsd).
	NoSniff bool
	// NoStore sets Cache-Control: no-store (the webhook API).
	NoStore bool
	// SharedValues puts shared, read-only value slices in the header map
	// instead of a new slice per header: the fixed headers then cost no
	// allocation (civic_auth's refusals). A handler that later edits header
	// values in place would edit every response's.
	SharedValues bool
}

// Shared header values of SharedValues. Read-only; each has capacity 1, so
// an Add elsewhere copies instead of writing into it.
var (
	sharedJSON    = []string{"application/json"}
	sharedNoSniff = []string{"nosniff"}
	sharedNoStore = []string{"no-store"}
)

// Write sends status and body with Content-Type: application/json and the
// headers j turns on. Header names are set in canonical form, replacing any
// value already set.
func (j JSONWriter) Write(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	j.set(h, "Content-Type", "application/json", sharedJSON)
	if j.NoSniff {
		j.set(h, "X-Content-Type-Options", "nosniff", sharedNoSniff)
	}
	if j.NoStore {
		j.set(h, "Cache-Control", "no-store", sharedNoStore)
	}
	if j.ContentLength {
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (j JSONWriter) set(h http.Header, key, value string, shared []string) {
	if j.SharedValues {
		h[key] = shared
		return
	}
	h[key] = []string{value}
}

// WriteJSON sends status and body with Content-Type: application/json and
// no other header.
func WriteJSON(w http.ResponseWriter, status int, body []byte) {
	JSONWriter{}.Write(w, status, body)
}
