package gqlguard

import (
	"fmt"
	"strings"
	"testing"
)

// graphql_guard with schema_view entitled in front of the lending library,
// as Caddy runs it (docs/design.md D67): each tier's documents are validated
// against the part of the schema its families reach.

// viewRoute is /lib/view: the library's families, entitlements from
// X-Families, schema_view entitled.
func viewRoute(t *testing.T) string {
	return fmt.Sprintf(`
	route /lib/view {
		graphql_guard {
			schema %s
			entitlements {http.request.header.X-Families}%s
			schema_view entitled
		}
		%s
	}`, testdataPath(t, "library.graphqls"), libraryFamilies, libraryEcho)
}

// unknownField is the validation refusal of a field the view does not hold.
func unknownField(field, typ string, line, column int) string {
	return fmt.Sprintf(`{"data":null,"errors":[{"message":"Cannot query field \"%s\" on type \"%s\".","locations":[{"line":%d,"column":%d}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`,
		field, typ, line, column)
}

func TestSchemaViewTwoTiers(t *testing.T) {
	s := startCaddy(t, viewRoute(t))
	catalog, loans, both := families("catalog"), families("loans"), families("catalog,loans")
	books := `{ books { nodes { title } } }`
	loanIDs := `{ loans(memberId: "m1") { id } }`
	for _, tc := range []struct {
		name    string
		headers map[string]string
		query   string
		status  int
		want    string
	}{
		{"catalog reads books", catalog, books, 200, echoed("query", "books", "catalog", "", q(books))},
		{"catalog: loans is unknown", catalog, loanIDs, 200, unknownField("loans", "Query", 1, 3)},
		{"catalog: a made-up field answers alike", catalog, `{ zzzzz(memberId: "m1") { id } }`, 200, unknownField("zzzzz", "Query", 1, 3)},
		{"loans: books is unknown", loans, books, 200, unknownField("books", "Query", 1, 3)},
		{"loans reads loans and their books", loans, `{ loans(memberId: "m1") { book { title } } }`, 200,
			echoed("query", "loans", "loans", "", q(`{ loans(memberId: "m1") { book { title } } }`))},
		{"catalog: borrowBook is unknown", catalog, borrowMutation, 200, unknownField("borrowBook", "Mutation", 1, 19)},
		{"both: returnBook, in no family, is unknown", both, returnMutation, 200, unknownField("returnBook", "Mutation", 1, 19)},
		{"both read across families", both, `{ books { endCursor } loans(memberId: "m1") { id } }`, 200,
			echoed("query", "books,loans", "catalog,loans", "", q(`{ books { endCursor } loans(memberId: "m1") { id } }`))},
		{"catalog: a fragment on Loan names an unknown type", catalog, `{ book(id: "b1") { ... on Loan { id } } }`, 200,
			`{"data":null,"errors":[{"message":"Unknown type \"Loan\".","locations":[{"line":1,"column":24}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`},
		{"catalog: __type of an outside type is refused as any introspection", catalog, `{ __type(name: "Loan") { name } }`, 200, bodyIntrospectionView},
		{"catalog: __type of a nonexistent type", catalog, `{ __type(name: "Zzzz") { name } }`, 200, bodyIntrospectionView},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := s.do(t, call{path: "/lib/view", headers: tc.headers, body: q(tc.query)})
			expect(t, tc.name, resp, body, tc.status, tc.want)
		})
	}
}

// bodyIntrospectionView: a caller whose view is not the whole schema gets
// no introspection (docs/design.md D67).
const bodyIntrospectionView = `{"data":null,"errors":[{"message":"GraphQL introspection is not allowed","locations":[{"line":1,"column":3}],"extensions":{"code":"INTROSPECTION_DISABLED"}}]}`

// TestSchemaViewCacheByView: one document, valid for one tier and not for
// the other, alternately from both: the compiled-document cache never hands
// one tier's outcome to the other.
func TestSchemaViewCacheByView(t *testing.T) {
	s := startCaddy(t, viewRoute(t))
	books := `{ books { endCursor } }`
	for i := range 3 {
		for _, who := range []struct {
			fam  string
			want string
		}{
			{"catalog", echoed("query", "books", "catalog", "", q(books))},
			{"loans", unknownField("books", "Query", 1, 3)},
		} {
			resp, body := s.do(t, call{path: "/lib/view", headers: families(who.fam), body: q(books)})
			expect(t, fmt.Sprintf("round %d, %s", i, who.fam), resp, body, 200, who.want)
		}
	}
}

// TestSchemaViewOff: without schema_view a field of an unowned family
// still validates and is refused after validation (403), as before.
func TestSchemaViewOff(t *testing.T) {
	s := startCaddy(t, strings.Replace(viewRoute(t), "schema_view entitled", "schema_view full", 1))
	resp, body := s.do(t, call{path: "/lib/view", headers: families("catalog"), body: q(`{ loans(memberId: "m1") { id } }`)})
	expect(t, "full view", resp, body, 403, bodyNotEntitled)
}
