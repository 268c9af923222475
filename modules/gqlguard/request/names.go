package request

import (
	"net/url"
	"slices"
	"strings"
)

// Parameter names in another spelling (docs/design.md D64). A URL parameter
// or body member named "Query", "QUERY", "variableſ" (long s), " query" or
// "query[]" is no GraphQL parameter to the guard, which would pass it by
// unchecked, yet a lenient upstream — one that ignores case, trims names or
// reads PHP-style arrays — may take it for query and run a document the
// guard never saw. The guard refuses such a name with 400 wherever it meets
// one: a GET's URL query, a POST's URL query and a body's member names.
// What every reader decodes alike stays accepted: a percent-encoded name
// (vari%61bles, which net/url and so the guard read as variables) and a
// JSON-escaped member name ("vari\u0061bles"); such requests are Aliased
// for the cache (Published).

// graphQLParams are the names GraphQL over HTTP gives a meaning to.
var graphQLParams = [...]string{"query", "variables", "operationName", "extensions", "documentId"}

func isGraphQLParam(name string) bool { return slices.Contains(graphQLParams[:], name) }

// lenientParam returns the GraphQL parameter a lenient reader takes name
// for — name cut at '[' or NUL, white space trimmed, then compared with
// strings.EqualFold (Unicode simple case folding, so the Kelvin sign K
// matches k and the long s ſ matches s) — or "" when none.
func lenientParam(name string) string {
	if i := strings.IndexAny(name, "[\x00"); i >= 0 {
		name = name[:i]
	}
	name = strings.TrimSpace(name)
	for _, p := range graphQLParams {
		if strings.EqualFold(name, p) {
			return p
		}
	}
	return ""
}

// misspelledParam returns the GraphQL parameter name (as decoded) stands
// for without being spelled so, or "" when it is spelled exactly or stands
// for none.
func misspelledParam(name string) string {
	if isGraphQLParam(name) {
		return ""
	}
	return lenientParam(name)
}

// misspelledMember is the refusal of a body member named name, nil when the
// name is no misspelled GraphQL parameter.
func misspelledMember(name string) error {
	if p := misspelledParam(name); p != "" {
		return badRequest("Request body key %q must be spelled %q", name, p)
	}
	return nil
}

// CheckURLNames refuses (an *Error, 400) a raw URL query holding a
// parameter whose name, percent-decoded as net/url decodes it, stands for a
// GraphQL parameter without being spelled so. Pairs are split at '&' and
// ';' (some readers split at both); a name that does not decode is left to
// the URL query's own reading (a GET's is refused as malformed).
func CheckURLNames(rawQuery string) error {
	var refused error
	eachURLName(rawQuery, func(_, name string, decoded bool) bool {
		if p := misspelledParam(name); decoded && p != "" {
			refused = badRequest("Request URL parameter %q must be spelled %q", name, p)
			return false
		}
		return true
	})
	return refused
}

// eachURLName calls yield with each pair's name as sent and percent-decoded
// as net/url decodes it (decoded false, name "", when it does not decode),
// until yield returns false. Pairs are split at '&' and ';': some readers
// split at both, net/url refuses ';'.
func eachURLName(rawQuery string, yield func(raw, name string, decoded bool) bool) {
	for rawQuery != "" {
		var pair string
		if i := strings.IndexAny(rawQuery, "&;"); i >= 0 {
			pair, rawQuery = rawQuery[:i], rawQuery[i+1:]
		} else {
			pair, rawQuery = rawQuery, ""
		}
		raw, _, _ := strings.Cut(pair, "=")
		name, decoded := raw, true
		if strings.ContainsAny(raw, "%+") {
			var err error
			if name, err = url.QueryUnescape(raw); err != nil {
				name, decoded = "", false
			}
		}
		if !yield(raw, name, decoded) {
			return
		}
	}
}
