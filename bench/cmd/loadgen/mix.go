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

// pollingMix is a dashboard polling the same pages over and over: 25 bills
// pages (congress 115–119 × limit 5, 10, 20, 25, 50) and 25 members pages (one
// state each), 50 distinct documents with variables, no cursors. Each
// connection cycles through all 50 from its own offset, so after the first
// pass nearly every gateway answer is a response-cache hit (bench/cache.sh).
func pollingMix() ([]request, error) {
	const bills = `query Bills($in: BillsInput) { bills(input: $in) { items { id congress type number officialTitle introducedDate memberName } nextCursor } }`
	const members = `query Members($in: MembersInput) { members(input: $in) { items { member_id name state terms { congress chamber party } } nextCursor } }`
	states := []string{"AL", "AK", "AZ", "CA", "CO", "CT", "FL", "GA", "IL", "IN", "MA", "MD", "MI", "MN", "NC",
		"NJ", "NY", "OH", "OR", "PA", "TX", "VA", "VT", "WA", "WI"}
	out := make([]request, 0, 50)
	add := func(name, query string, in map[string]any) error {
		b, err := json.Marshal(map[string]any{"query": query, "variables": map[string]any{"in": in}})
		if err != nil {
			return fmt.Errorf("mix %s: %w", name, err)
		}
		out = append(out, request{name: name, body: b})
		return nil
	}
	for congress := 115; congress <= 119; congress++ {
		for _, limit := range []int{5, 10, 20, 25, 50} {
			if err := add(fmt.Sprintf("bills %d limit %d", congress, limit), bills,
				map[string]any{"congress": congress, "limit": limit}); err != nil {
				return nil, err
			}
		}
	}
	for _, st := range states {
		if err := add("members "+st, members, map[string]any{"state": st, "limit": 10}); err != nil {
			return nil, err
		}
	}
	return out, nil
}
