package request

import (
	"net/http"

	"github.com/civicgate/civicgate/internal/rawjson"
	"github.com/civicgate/civicgate/modules/contract"
)

// Published is the request as the guard decoded it, for the handlers after
// it (docs/design.md D40): the fast path's slices of the body as they are
// (no copy unless operationName had escapes), or what the slow
// path or the URL query decoded. A POST whose URL names a GraphQL parameter
// (any spelling) is Aliased: some servers read URL parameters of a POST too.
func (l *Located) Published(r *http.Request) contract.GraphQLRequest {
	p := l.sent
	if l.fast {
		p = contract.GraphQLRequest{Variables: l.raw.varsSent, Extensions: l.raw.extSent, DocumentID: l.raw.docID}
		p.Query, p.QueryEscaped = l.raw.query, l.raw.queryEsc // decoded on demand: QueryText
		p.OperationName = l.raw.op
		if l.raw.opEsc {
			if op, err := rawjson.Unquote(l.raw.opQuoted); err == nil {
				p.OperationName = []byte(op)
			}
		}
	}
	p.Persisted = l.resolvedBy != ""
	if r.Method != http.MethodGet && r.URL.RawQuery != "" && urlAliasesGraphQL(r.URL.RawQuery, true) {
		p.Aliased = true
	}
	return p
}

// urlAliasesGraphQL says whether a name in the raw URL query could be read
// as a GraphQL parameter without being spelled exactly as one: written with
// percent-escapes or '+' that decode to one (net/url reads it so, and so do
// the guard and Go upstreams), or equal to one after cutting at '[' or NUL,
// trimming white space and ignoring case (readers that are lenient read it
// so). With anyName, an exact name counts too (a POST's URL). Pairs are
// split at '&' and ';' (some readers split at both; net/url refuses ';').
// A name that does not decode counts as an alias.
func urlAliasesGraphQL(rawQuery string, anyName bool) bool {
	aliased := false
	eachURLName(rawQuery, func(raw, name string, decoded bool) bool {
		exact := name == raw && isGraphQLParam(name)
		aliased = !decoded || (exact && anyName) || (!exact && looseGraphQLParam(name))
		return !aliased
	})
	return aliased
}

// looseGraphQLParam: name is a GraphQL parameter to a lenient reader.
func looseGraphQLParam(name string) bool { return lenientParam(name) != "" }
