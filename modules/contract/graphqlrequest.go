package contract

import (
	"encoding/json"
	"fmt"
)

// GraphQLRequest is a GraphQL-over-HTTP request as graphql_guard decoded it
// (the POST body's members, or a GET's URL query parameters), published for
// the handlers after it on the request it forwards (Request.SetGraphQL), so that they read the
// request the guard checked instead of parsing it again (docs/design.md D40).
// The byte slices may alias the checked body: read them, never modify them.
type GraphQLRequest struct {
	// Query is the query member's text as sent, nil when absent (a persisted
	// hash in Extensions or a DocumentID named the document): a GET's
	// parameter percent-decoded; in a POST body the JSON string's contents,
	// still escaped when QueryEscaped (QueryText decodes them: the guard does
	// not, to publish without a copy).
	Query        []byte
	QueryEscaped bool
	// Persisted: the guard resolved the document from a persisted hash or a
	// documentId ({graphql.document_hash} is the resolved document's).
	Persisted bool
	// OperationName is the operationName member as sent, decoded; nil when
	// absent or null.
	OperationName []byte
	// Variables is the variables member's raw JSON as sent (a GET's
	// percent-decoded parameter): nil when absent (or an empty parameter),
	// the literal null when null, else the object, not re-ordered.
	Variables []byte
	// Extensions is the extensions member's raw JSON as sent, like
	// Variables.
	Extensions []byte
	// DocumentID is the documentId member; nil when absent.
	DocumentID []byte
	// Aliased: some parameter or member name of the request is not spelled
	// exactly as one of query, variables, operationName, extensions or
	// documentId yet another reader could take it for one — a
	// percent-encoded or JSON-escaped name, another case, surrounding white
	// space, a "[…]" suffix, a NUL — or a POST carries such a parameter in
	// its URL. The guard and Go's readers agree on what such a request
	// means; another upstream may not, so a response cache must not share
	// its answer (docs/design.md D40).
	Aliased bool
	// Operation is the operation the guard selected, checked and admitted
	// (what the {graphql.*} placeholders project for Caddyfiles and logs).
	Operation GraphQLOperation
}

// GraphQLOperation is the selected operation of a GraphQLRequest, as the
// guard compiled it: the values a later handler keys or tags by, typed
// (docs/design.md D61). The guard computes it once per cached document, so
// Families is shared: read it, never modify it.
type GraphQLOperation struct {
	// Type is query, mutation or subscription ({graphql.operation_type}).
	Type string
	// Name is the operation's name, "" if anonymous
	// ({graphql.operation_name}): the selected operation's, also when the
	// request named none.
	Name string
	// DocumentHash is the hex SHA-256 of the document in normal form, the
	// same for a text sent in full or resolved from a persisted hash
	// ({graphql.document_hash}).
	DocumentHash string
	// Families are the families the operation touches, sorted
	// ({graphql.families}, comma-separated there).
	Families []string
	// Shape is what the operation reads of the schema, computed once per
	// compiled document and shared: read it, never modify it. Nil when the
	// guard did not compute one (docs/design.md D69).
	Shape *OperationShape
}

// OperationShape is what one compiled operation reads of the schema it was
// validated against, and its text with the caller's literal values removed:
// what usage records once per operation, deprecations and `civicgate schema
// check` read (docs/design.md D69).
type OperationShape struct {
	// Coordinates are the schema coordinates the operation touches, sorted
	// and unique: "Type.field", "Type.field(arg:)", "Input.field" for the
	// input fields its literals name and "Enum.VALUE" for enum literals.
	Coordinates []string
	// Deprecated are the Coordinates the schema marks @deprecated, sorted;
	// nil when none.
	Deprecated []string
	// DeprecationReasons are the schema's @deprecated(reason:) texts, in
	// the order of Deprecated (the GraphQL default "No longer supported"
	// when the directive gives none); nil when none. Free text from the
	// schema: usage records it and the console shows it escaped, headers
	// never carry it (docs/design.md D69, D77).
	DeprecationReasons []string
	// Normalized is the operation's document in normal form with every
	// literal value that could carry the caller's data replaced by a
	// constant of its kind; stable for one hash.
	Normalized string
}

// QueryText is Query decoded (JSON escapes resolved).
func (r *GraphQLRequest) QueryText() (string, error) {
	if !r.QueryEscaped {
		return string(r.Query), nil
	}
	var s string
	if err := json.Unmarshal(append(append([]byte{'"'}, r.Query...), '"'), &s); err != nil {
		return "", fmt.Errorf("contract: graphql request query: %w", err)
	}
	return s, nil
}
