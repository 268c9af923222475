package request

import "github.com/civicgate/civicgate/internal/rawjson"

// Locating a persisted document reference in a request without decoding it:
// Apollo's extensions.persistedQuery {version, sha256Hash} (APQ) and the
// GraphQL-over-HTTP documentId. Allocation-free on valid JSON (the body has
// passed rawjson.Valid, or was re-encoded by decodeRequest).

// PersistedHash returns extensions.persistedQuery.sha256Hash's raw
// contents and the version, or ok false when ext (a valid JSON object) has
// no persistedQuery object with a string sha256Hash.
func PersistedHash(ext []byte) (hash []byte, version []byte, ok bool) {
	pq := rawjson.MemberOf(ext, "persistedQuery")
	if len(pq) == 0 || pq[0] != '{' {
		return nil, nil, false
	}
	h := rawjson.MemberOf(pq, "sha256Hash")
	if len(h) < 2 || h[0] != '"' {
		return nil, nil, false
	}
	return h[1 : len(h)-1], rawjson.MemberOf(pq, "version"), true
}

func hasPersistedHash(ext []byte) bool {
	_, _, ok := PersistedHash(ext)
	return ok
}
