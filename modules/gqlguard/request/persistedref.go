package gqlguard

// Locating a persisted document reference in a request without decoding it:
// Apollo's extensions.persistedQuery {version, sha256Hash} (APQ) and the
// GraphQL-over-HTTP documentId. Allocation-free on valid JSON (the body has
// passed validJSON, or was re-encoded by decodeRequest).

// persistedHashOf returns extensions.persistedQuery.sha256Hash's raw
// contents and the version, or ok false when ext has no persistedQuery
// object with a string sha256Hash.
func persistedHashOf(ext []byte) (hash []byte, version []byte, ok bool) {
	pq := memberOf(ext, "persistedQuery")
	if len(pq) == 0 || pq[0] != '{' {
		return nil, nil, false
	}
	h := memberOf(pq, "sha256Hash")
	if len(h) < 2 || h[0] != '"' {
		return nil, nil, false
	}
	return h[1 : len(h)-1], memberOf(pq, "version"), true
}

func hasPersistedHash(ext []byte) bool {
	_, _, ok := persistedHashOf(ext)
	return ok
}

// memberOf returns the raw value of obj's member named key (the first one
// whose name has no escapes), or nil. obj is a valid JSON object.
func memberOf(obj []byte, key string) []byte {
	if len(obj) < 2 || obj[0] != '{' {
		return nil
	}
	i := 1
	for i < len(obj) {
		i = skipWS(obj, i)
		if i >= len(obj) || obj[i] == '}' {
			return nil
		}
		if obj[i] == ',' {
			i = skipWS(obj, i+1)
		}
		if i >= len(obj) || obj[i] != '"' {
			return nil
		}
		ks, ke, kesc := scanString(obj, i)
		i = skipWS(obj, ke+1)
		i = skipWS(obj, i+1) // ':'
		if i >= len(obj) {
			return nil
		}
		vs := i
		ve, _, _ := skipValue(obj, i)
		if !kesc && string(obj[ks:ke]) == key {
			return obj[vs:ve]
		}
		i = ve
	}
	return nil
}
