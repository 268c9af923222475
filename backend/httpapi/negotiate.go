package httpapi

import (
	"net/http"
	"strconv"
	"strings"
)

// Content negotiation of POST /graphql (docs/design.md D42): a client that accepts
// application/graphql-response+json (GraphQL over HTTP) gets its answers in that media type and with its status
// codes (a request error is a 400 without "data"); every other client gets application/json exactly as
// docs/api.md "Errors" documents it.

// responseMedia is the media type a /graphql answer is written in.
type responseMedia uint8

const (
	mediaJSON            responseMedia = iota // application/json: the default, and the legacy statuses
	mediaGraphQLResponse                      // application/graphql-response+json
)

// Content-Type values of the two media types. application/json stays without a charset: it is what every
// client has always received (JSON is UTF-8 by definition, RFC 8259).
const (
	contentTypeJSON            = "application/json"
	contentTypeGraphQLResponse = "application/graphql-response+json; charset=utf-8"
)

var (
	headerJSON            = []string{contentTypeJSON}
	headerGraphQLResponse = []string{contentTypeGraphQLResponse}
	headerNoSniff         = []string{"nosniff"}
	headerVaryAccept      = []string{"Accept"}
)

// negotiateMedia picks the answer's media type from the request's Accept values (RFC 9110 §12.5.1):
// each candidate gets the weight of the most specific range that matches it ("application/json" over
// "application/*" over "*/*"); the higher weight wins. On a tie, a candidate the client named beats one only a
// wildcard reached, and of two named ones application/graphql-response+json wins (RFC 9110 gives the order
// of the list no meaning; the gateway's refusals pick that type whenever it is named); when only wildcards reach both
// (`Accept: */*`), application/json wins, as GraphQL over HTTP asks of a server before its watershed. No Accept
// at all, or one that accepts neither type, is answered in application/json: the documented bodies are what
// every legacy client gets, and a 406 would break a client that sends a stray Accept through a proxy.
func negotiateMedia(accept []string) responseMedia {
	if len(accept) == 0 {
		return mediaJSON
	}
	var gr, js mediaMatch
	for _, value := range accept {
		for value != "" {
			var part string
			part, value, _ = strings.Cut(value, ",")
			rng, q, ok := parseMediaRange(part)
			if !ok {
				continue
			}
			gr.offer(rng, "graphql-response+json", q)
			js.offer(rng, "json", q)
		}
	}
	switch {
	case gr.q == 0 && js.q == 0:
		return mediaJSON
	case gr.q != js.q:
		if gr.q > js.q {
			return mediaGraphQLResponse
		}
		return mediaJSON
	case gr.specificity != js.specificity:
		if gr.specificity > js.specificity {
			return mediaGraphQLResponse
		}
		return mediaJSON
	case gr.specificity == specificExact:
		return mediaGraphQLResponse
	}
	return mediaJSON
}

// Specificity of the range that matched a candidate.
const (
	specificNone = iota
	specificAny  // */*
	specificType // application/*
	specificExact
)

// mediaMatch is the most specific Accept range matching one candidate "application/<subtype>" and its weight
// in thousandths.
type mediaMatch struct {
	specificity int
	q           int
}

func (m *mediaMatch) offer(rng, subtype string, q int) {
	var s int
	switch {
	case rng == "*/*":
		s = specificAny
	case rng == "application/*":
		s = specificType
	case len(rng) == len("application/")+len(subtype) && strings.HasPrefix(rng, "application/") && rng[len("application/"):] == subtype:
		s = specificExact
	default:
		return
	}
	if s > m.specificity {
		m.specificity, m.q = s, q
	}
}

// parseMediaRange returns one Accept element's range, lower-cased, and its weight in thousandths (default 1000);
// ok is false for an element that is empty or has a malformed weight (it is ignored, as a broken preference).
func parseMediaRange(part string) (rng string, q int, ok bool) {
	rng, params, _ := strings.Cut(part, ";")
	rng = strings.TrimSpace(rng)
	if rng == "" || !strings.Contains(rng, "/") {
		return "", 0, false
	}
	rng = lowerASCII(rng)
	q = 1000
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		name, val, _ := strings.Cut(p, "=")
		if !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || f < 0 || f > 1 {
			return "", 0, false
		}
		q = int(f*1000 + 0.5)
	}
	return rng, q, true
}

// lowerASCII lower-cases s without allocating when it already is (the common case).
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// writeGraphQL writes a GraphQL-shaped body ({"data":…} or {"errors":[…]}) of /graphql in the negotiated media
// type, with nosniff and Vary: Accept (the media type depends on it: a shared cache must not serve one client's
// answer to a client that asked for the other).
func writeGraphQL(w http.ResponseWriter, media responseMedia, status int, body []byte) {
	h := w.Header()
	if media == mediaGraphQLResponse {
		h["Content-Type"] = headerGraphQLResponse
	} else {
		h["Content-Type"] = headerJSON
	}
	h["X-Content-Type-Options"] = headerNoSniff
	h["Vary"] = headerVaryAccept
	// A body over net/http's 2 KB pre-header buffer would otherwise go out chunked: three write(2) calls
	// (header and the first 4 KB, the rest, the last chunk) instead of two (docs/design.md D58).
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
