package records

import (
	"fmt"
	"regexp"
	"strings"
)

// Paging holds the two members every list input shares (docs/api.md "Paging").
type Paging struct {
	Cursor *string `json:"cursor"`
	Limit  *int    `json:"limit"`
}

// BillsInput filters bills.
type BillsInput struct {
	Congress *int    `json:"congress"`
	Type     *string `json:"type"`
	Q        *string `json:"q"`
	Cursor   *string `json:"cursor"`
	Limit    *int    `json:"limit"`
}

// MembersInput filters members.
type MembersInput struct {
	State    *string `json:"state"`
	Chamber  *string `json:"chamber"`
	Congress *int    `json:"congress"`
	Cursor   *string `json:"cursor"`
	Limit    *int    `json:"limit"`
}

// RegulatoryFilingsInput filters regulatory filings.
type RegulatoryFilingsInput struct {
	AgencyID     *string `json:"agency_id"`
	AgencyName   *string `json:"agency_name"`
	Type         *string `json:"type"`
	FilingYear   *int    `json:"filing_year"`
	FilingPeriod *string `json:"filing_period"`
	RIN          *string `json:"rIN"`
	DocketID     *string `json:"docket_id"`
	Cursor       *string `json:"cursor"`
	Limit        *int    `json:"limit"`
}

// FederalBudgetsInput filters budget lines.
type FederalBudgetsInput struct {
	Dataset    string  `json:"dataset"`
	Congress   *int    `json:"congress"`
	FiscalYear *int    `json:"fiscal_year"`
	Month      *string `json:"month"`
	Agency     *string `json:"agency"`
	BureauCode *string `json:"bureau_code"`
	Account    *string `json:"account"`
	// Edition picks one OMB release (APPROPRIATIONS only); not a spec member, an addition (docs/design.md D29).
	Edition *int    `json:"edition"`
	Cursor  *string `json:"cursor"`
	Limit   *int    `json:"limit"`
}

// LobbyingDisclosuresInput filters lobbying disclosures.
type LobbyingDisclosuresInput struct {
	RegistrantName *string `json:"registrant_name"`
	RegistrantID   *string `json:"registrant_id"`
	ClientName     *string `json:"client_name"`
	ClientID       *string `json:"client_id"`
	LobbyistName   *string `json:"lobbyist_name"`
	FilingYear     *int    `json:"filing_year"`
	FilingPeriod   *string `json:"filing_period"`
	IssueArea      *string `json:"issue_area"`
	AgencyActedOn  *string `json:"agency_acted_on"`
	Cursor         *string `json:"cursor"`
	Limit          *int    `json:"limit"`
}

// Dataset values.
const (
	DatasetAppropriations = "APPROPRIATIONS"
	DatasetOutlays        = "OUTLAYS"
)

// Page size bounds (docs/api.md "Paging").
const (
	DefaultLimit = 25
	MaxLimit     = 100
)

// InputError is a client mistake: GraphQL BAD_USER_INPUT, or 400 on GET /bills.
type InputError struct {
	Field   string // input member, e.g. "limit"
	Message string
}

func (e *InputError) Error() string { return e.Message }

func inputErrorf(field, format string, args ...any) *InputError {
	return &InputError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// Limit validates a page size: nil → DefaultLimit; outside 1..MaxLimit → *InputError (never clamped).
func Limit(limit *int) (int, error) {
	if limit == nil {
		return DefaultLimit, nil
	}
	if *limit < 1 || *limit > MaxLimit {
		return 0, inputErrorf("limit", "limit must be between 1 and %d, got %d", MaxLimit, *limit)
	}
	return *limit, nil
}

var monthRE = regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])$`)

// ValidateMembers checks chamber, compared like every string filter without regard to case (docs/design.md D4):
// "Senate" is senate.
func ValidateMembers(in MembersInput) error {
	if in.Chamber != nil {
		if c := strings.ToLower(*in.Chamber); c != "house" && c != "senate" {
			return inputErrorf("chamber", "chamber must be house or senate, got %q", *in.Chamber)
		}
	}
	return nil
}

// ValidateBudgets checks the dataset-specific members and the month format (docs/design.md D4).
func ValidateBudgets(in FederalBudgetsInput) error {
	if in.Dataset != DatasetAppropriations && in.Dataset != DatasetOutlays {
		return inputErrorf("dataset", "dataset must be APPROPRIATIONS or OUTLAYS")
	}
	if in.BureauCode != nil && in.Dataset != DatasetAppropriations {
		return inputErrorf("bureau_code", "bureau_code can only be used with dataset APPROPRIATIONS")
	}
	if in.Edition != nil && in.Dataset != DatasetAppropriations {
		return inputErrorf("edition", "edition can only be used with dataset APPROPRIATIONS")
	}
	if in.Month != nil {
		if in.Dataset != DatasetOutlays {
			return inputErrorf("month", "month can only be used with dataset OUTLAYS")
		}
		if !monthRE.MatchString(*in.Month) {
			return inputErrorf("month", "month must have the form YYYY-MM, got %q", *in.Month)
		}
	}
	return nil
}
