package httpapi

import (
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/civicgate/civicgate/modules/contract"
)

//go:generate go run ../../internal/familyfile/genfamilies -in ../../caddyfile/families.caddy -out families_gen.go

// FamilyBills is the family of GET /bills, the one endpoint outside
// /v1/graphql that recordsd checks by itself (routes.caddy's `require_family
// bills` on that route): a fact of the route, not of the root-field map below.
const FamilyBills = "bills"

// rootFamily is the family that owns a Query root field; ok is false for a
// field no family owns (introspection and __typename are not asked). The map
// is generated from caddyfile/families.caddy, the family lines the gateway's
// graphql_guard and civic_mcp import (docs/design.md D62; docs/api.md "Tiers
// and families").
func rootFamily(field string) (family string, ok bool) {
	family, ok = rootFamilies[field]
	return family, ok
}

// queryImplementors is what gqlgen's generated code collects the Query root
// with, so the check below sees exactly the fields that will execute (and
// gqlgen's per-operation CollectFields cache answers the second call).
var queryImplementors = []string{"Query"}

// entitledOperation is recordsd's own entitlement check behind the gateway's
// (docs/design.md D7; docs/security.md "What each layer checks"): every root field the operation will
// execute — fragments expanded, @skip/@include applied with the request's
// variables, exactly as gqlgen's executor collects them — must belong to a
// family the identity assertion grants. A root field of no family (a schema
// addition nobody assigned) is refused too: fail closed. Introspection and
// __typename are free.
func entitledOperation(rc *graphql.OperationContext, claims *contract.Claims) bool {
	if rc.Operation == nil || rc.Operation.Operation != ast.Query {
		return false
	}
	for _, f := range graphql.CollectFields(rc, rc.Operation.SelectionSet, queryImplementors) {
		switch f.Name {
		case "__typename", "__schema", "__type":
			continue
		}
		family, ok := rootFamily(f.Name)
		if !ok || !claims.Entitled(family) {
			return false
		}
	}
	return true
}

// refuseNotEntitled writes the 403 the gateway would have written, byte for
// byte (contract.BodyNotEntitled, docs/api.md "Errors").
func refuseNotEntitled(w http.ResponseWriter) {
	writeBody(w, http.StatusForbidden, contract.BodyNotEntitled)
}
