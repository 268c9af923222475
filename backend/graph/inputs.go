package graph

import (
	"context"
	"fmt"

	"github.com/civicgate/civicgate/backend/records"
)

// The root fields' input arguments decoded by gqlgen's generated code — the one decoder of the API's inputs —
// for the compiled read path (backend/readplan, docs/design.md D51). The generated functions read no
// operation state, so a zero executionContext serves them. v is the argument's value after variable
// coercion: nil (absent or null: the zero input) or an object; anything else is an error, never a panic.

// DecodeBillsInput decodes a bills(input:) argument.
func DecodeBillsInput(v any) (records.BillsInput, error) {
	return decodeInput(v, (*executionContext).unmarshalInputBillsInput)
}

// DecodeMembersInput decodes a members(input:) argument.
func DecodeMembersInput(v any) (records.MembersInput, error) {
	return decodeInput(v, (*executionContext).unmarshalInputMembersInput)
}

// DecodeFederalBudgetsInput decodes a federalBudgets(input:) argument.
func DecodeFederalBudgetsInput(v any) (records.FederalBudgetsInput, error) {
	return decodeInput(v, (*executionContext).unmarshalInputFederalBudgetsInput)
}

// DecodeRegulatoryFilingsInput decodes a regulatoryFilings(input:) argument.
func DecodeRegulatoryFilingsInput(v any) (records.RegulatoryFilingsInput, error) {
	return decodeInput(v, (*executionContext).unmarshalInputRegulatoryFilingsInput)
}

// DecodeLobbyingDisclosuresInput decodes a lobbyingDisclosures(input:) argument.
func DecodeLobbyingDisclosuresInput(v any) (records.LobbyingDisclosuresInput, error) {
	return decodeInput(v, (*executionContext).unmarshalInputLobbyingDisclosuresInput)
}

func decodeInput[T any](v any, unmarshal func(*executionContext, context.Context, any) (T, error)) (T, error) {
	var zero T
	switch v.(type) {
	case nil:
		return zero, nil
	case map[string]any:
		return unmarshal(&executionContext{}, context.Background(), v)
	default:
		return zero, fmt.Errorf("graph: input of type %T", v)
	}
}
