package auth

import (
	"fmt"
	"strings"

	"github.com/civicgate/civicgate/modules/contract"
)

// parseTierLine reads the arguments of a tier line after its name
// (contract.ParseTierLine) into the JSON form. The errors name no tier: the
// caller adds it.
func parseTierLine(args []string) (TierConfig, error) {
	tl, err := contract.ParseTierLine(args)
	if err != nil {
		return TierConfig{}, err
	}
	return TierConfig{Rate: tl.Rates, CostBudget: tl.CostBudget, Families: tl.Families}, nil
}

// tierPolicy is one tier as requests use it, with its placeholder values
// boxed once so that publishing them allocates nothing.
type tierPolicy struct {
	name        string
	families    []string
	rateVal     any // contract.Rates of the tier's rates: {civic.rate}
	costVal     any // the cost budget's Rate.String(), "" without one: {civic.cost_budget}
	familiesVal any
}

// newTierPolicy validates one tier of the JSON configuration.
func newTierPolicy(name string, tc TierConfig) (*tierPolicy, error) {
	rates, err := contract.ParseRates(tc.Rate)
	if err != nil {
		return nil, fmt.Errorf("tier %s: %w", name, err)
	}
	cost := ""
	if tc.CostBudget != "" {
		r, err := contract.ParseRate(tc.CostBudget)
		if err != nil {
			return nil, fmt.Errorf("tier %s: cost: %w", name, err)
		}
		cost = r.String()
	}
	for _, f := range tc.Families {
		if !familyRE.MatchString(f) || f == contract.TierCostWord {
			return nil, fmt.Errorf("tier %s: bad family %q", name, f)
		}
	}
	return &tierPolicy{
		name: name, families: tc.Families,
		rateVal: contract.Rates(rates), costVal: cost, familiesVal: strings.Join(tc.Families, ","),
	}, nil
}

func (t *tierPolicy) entitled(family string) bool {
	for _, f := range t.families {
		if f == family {
			return true
		}
	}
	return false
}
