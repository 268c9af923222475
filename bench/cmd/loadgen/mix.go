package main

import (
	"encoding/json"
	"fmt"
)

// request is one GraphQL POST body of the mix.
type request struct {
	name string
	body []byte
}

// recordsMix is the GraphQL request mix of the side-by-side bench: one small
// page of each record family, with inline arguments, variables and an
// operation name, so the guard's decode, coercion, cost and entitlement paths
// all run. Every request reads PostgreSQL through recordsd.
func recordsMix() ([]request, error) {
	type spec struct {
		name, query, op string
		vars            map[string]any
	}
	specs := []spec{
		{name: "bills page", query: `{ bills(input: {limit: 10}) { items { id congress type number officialTitle introducedDate memberName } nextCursor } }`},
		{name: "members state", query: `query M($in: MembersInput) { members(input: $in) { items { member_id name state terms { congress chamber party } } nextCursor } }`,
			vars: map[string]any{"in": map[string]any{"limit": 10, "state": "VT"}}},
		{name: "regulatory page", query: `query R($in: RegulatoryFilingsInput) { regulatoryFilings(input: $in) { items { id document_number type title agency_name publication_date filing_year filing_period } nextCursor } }`,
			op: "R", vars: map[string]any{"in": map[string]any{"limit": 10}}},
		{name: "budgets outlays", query: `query B($in: FederalBudgetsInput!) { federalBudgets(input: $in) { items { id dataset fiscal_year month agency_name account_title amount } nextCursor } }`,
			vars: map[string]any{"in": map[string]any{"dataset": "OUTLAYS", "limit": 10}}},
		{name: "lobbying page", query: `query L { lobbyingDisclosures(input: {limit: 5}) { items { id filing_type filing_year registrant_name client_name issue_areas } nextCursor } }`,
			op: "L"},
	}
	out := make([]request, 0, len(specs))
	for _, s := range specs {
		m := map[string]any{"query": s.query}
		if s.vars != nil {
			m["variables"] = s.vars
		}
		if s.op != "" {
			m["operationName"] = s.op
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("mix %s: %w", s.name, err)
		}
		out = append(out, request{name: s.name, body: b})
	}
	return out, nil
}

// lightMix is one request the backend answers without PostgreSQL
// ({ __typename }), so proxy overhead is a larger share of each request.
func lightMix() []request {
	return []request{{name: "typename", body: []byte(`{"query":"{ __typename }"}`)}}
}
