package readplan

import (
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/civicgate/civicgate/backend/records"
)

// The root fields' inputs, unmarshalled as gqlgen's generated code does (backend/graph/generated.go): members
// through graphql.UnmarshalInt and UnmarshalString, enums as their strings. Any error sends the request the
// reference way, which answers it.

// billsInput is gqlgen's generated unmarshalling of an optional BillsInput (backend/graph/generated.go):
// absent or null is the zero input; members go through graphql.UnmarshalInt and UnmarshalString.
func billsInput(v any) (records.BillsInput, error) {
	var in records.BillsInput
	if v == nil {
		return in, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return in, fmt.Errorf("readplan: input of type %T", v)
	}
	var err error
	for k, v := range m {
		switch k {
		case "congress":
			in.Congress, err = optional(v, graphql.UnmarshalInt)
		case "limit":
			in.Limit, err = optional(v, graphql.UnmarshalInt)
		case "type":
			in.Type, err = optional(v, graphql.UnmarshalString)
		case "q":
			in.Q, err = optional(v, graphql.UnmarshalString)
		case "cursor":
			in.Cursor, err = optional(v, graphql.UnmarshalString)
		}
		if err != nil {
			return in, err
		}
	}
	return in, nil
}

// membersInput is gqlgen's generated unmarshalling of an optional MembersInput, as billsInput.
func membersInput(v any) (records.MembersInput, error) {
	var in records.MembersInput
	if v == nil {
		return in, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return in, fmt.Errorf("readplan: input of type %T", v)
	}
	var err error
	for k, v := range m {
		switch k {
		case "state":
			in.State, err = optional(v, graphql.UnmarshalString)
		case "chamber":
			in.Chamber, err = optional(v, graphql.UnmarshalString)
		case "congress":
			in.Congress, err = optional(v, graphql.UnmarshalInt)
		case "limit":
			in.Limit, err = optional(v, graphql.UnmarshalInt)
		case "cursor":
			in.Cursor, err = optional(v, graphql.UnmarshalString)
		}
		if err != nil {
			return in, err
		}
	}
	return in, nil
}

// budgetsInput is gqlgen's generated unmarshalling of a FederalBudgetsInput (required: null is not one).
func budgetsInput(v any) (records.FederalBudgetsInput, error) {
	var in records.FederalBudgetsInput
	m, ok := v.(map[string]any)
	if !ok {
		return in, fmt.Errorf("readplan: input of type %T", v)
	}
	var err error
	for k, v := range m {
		switch k {
		case "dataset":
			in.Dataset, err = graphql.UnmarshalString(v)
		case "congress":
			in.Congress, err = optional(v, graphql.UnmarshalInt)
		case "fiscal_year":
			in.FiscalYear, err = optional(v, graphql.UnmarshalInt)
		case "month":
			in.Month, err = optional(v, graphql.UnmarshalString)
		case "agency":
			in.Agency, err = optional(v, graphql.UnmarshalString)
		case "bureau_code":
			in.BureauCode, err = optional(v, graphql.UnmarshalString)
		case "account":
			in.Account, err = optional(v, graphql.UnmarshalString)
		case "edition":
			in.Edition, err = optional(v, graphql.UnmarshalInt)
		case "limit":
			in.Limit, err = optional(v, graphql.UnmarshalInt)
		case "cursor":
			in.Cursor, err = optional(v, graphql.UnmarshalString)
		}
		if err != nil {
			return in, err
		}
	}
	return in, nil
}

// regulatoryInput is gqlgen's generated unmarshalling of an optional RegulatoryFilingsInput, as billsInput.
func regulatoryInput(v any) (records.RegulatoryFilingsInput, error) {
	var in records.RegulatoryFilingsInput
	if v == nil {
		return in, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return in, fmt.Errorf("readplan: input of type %T", v)
	}
	var err error
	for k, v := range m {
		switch k {
		case "agency_id":
			in.AgencyID, err = optional(v, graphql.UnmarshalString)
		case "agency_name":
			in.AgencyName, err = optional(v, graphql.UnmarshalString)
		case "type":
			in.Type, err = optional(v, graphql.UnmarshalString)
		case "filing_year":
			in.FilingYear, err = optional(v, graphql.UnmarshalInt)
		case "filing_period":
			in.FilingPeriod, err = optional(v, graphql.UnmarshalString)
		case "rIN":
			in.RIN, err = optional(v, graphql.UnmarshalString)
		case "docket_id":
			in.DocketID, err = optional(v, graphql.UnmarshalString)
		case "limit":
			in.Limit, err = optional(v, graphql.UnmarshalInt)
		case "cursor":
			in.Cursor, err = optional(v, graphql.UnmarshalString)
		}
		if err != nil {
			return in, err
		}
	}
	return in, nil
}

// lobbyingInput is gqlgen's generated unmarshalling of an optional LobbyingDisclosuresInput, as billsInput.
func lobbyingInput(v any) (records.LobbyingDisclosuresInput, error) {
	var in records.LobbyingDisclosuresInput
	if v == nil {
		return in, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return in, fmt.Errorf("readplan: input of type %T", v)
	}
	var err error
	for k, v := range m {
		switch k {
		case "registrant_name":
			in.RegistrantName, err = optional(v, graphql.UnmarshalString)
		case "registrant_id":
			in.RegistrantID, err = optional(v, graphql.UnmarshalString)
		case "client_name":
			in.ClientName, err = optional(v, graphql.UnmarshalString)
		case "client_id":
			in.ClientID, err = optional(v, graphql.UnmarshalString)
		case "lobbyist_name":
			in.LobbyistName, err = optional(v, graphql.UnmarshalString)
		case "filing_year":
			in.FilingYear, err = optional(v, graphql.UnmarshalInt)
		case "filing_period":
			in.FilingPeriod, err = optional(v, graphql.UnmarshalString)
		case "issue_area":
			in.IssueArea, err = optional(v, graphql.UnmarshalString)
		case "agency_acted_on":
			in.AgencyActedOn, err = optional(v, graphql.UnmarshalString)
		case "limit":
			in.Limit, err = optional(v, graphql.UnmarshalInt)
		case "cursor":
			in.Cursor, err = optional(v, graphql.UnmarshalString)
		}
		if err != nil {
			return in, err
		}
	}
	return in, nil
}

func optional[T any](v any, unmarshal func(any) (T, error)) (*T, error) {
	if v == nil {
		return nil, nil
	}
	x, err := unmarshal(v)
	if err != nil {
		return nil, err
	}
	return &x, nil
}
