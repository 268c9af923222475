package auth

import (
	"errors"
	"fmt"
	"strings"

	"github.com/civicgate/civicgate/modules/contract"
)

// Tiers (docs/design.md D6, D11): a tier line is
//
//	tier <name> <rate>... [cost <rate>] [<family>...]
//
// e.g. `tier paid_beta 100/m 20000/d cost 50000/h bills members`. The rates
// are the tokens holding '/' before `cost` and the families (a family name
// never holds '/'), one to contract.MaxRatesPerTier of them, each window
// once (contract.ParseRates); `cost` takes exactly one rate, the tier's cost
// budget in GraphQL cost points per window; no family may be named `cost`.

// costWord introduces a tier's cost budget on its line.
const costWord = "cost"

// parseTierLine reads the arguments of a tier line after its name into the
// JSON form: the rates as written, comma-separated (one rate stays exactly
// as written), the cost budget as written. The errors name no tier: the
// caller adds it.
func parseTierLine(args []string) (TierConfig, error) {
	i := 0
	for i < len(args) && strings.Contains(args[i], "/") {
		i++
	}
	if i == 0 {
		if len(args) > 0 && args[0] == costWord {
			return TierConfig{}, errors.New("want at least one rate (<quota>/<window>, e.g. 100/m) before cost")
		}
		if len(args) == 0 {
			return TierConfig{}, errors.New("want at least one rate (<quota>/<window>, e.g. 100/m)")
		}
		_, err := contract.ParseRate(args[0]) // a first argument without '/' is a mistyped rate
		return TierConfig{}, err
	}
	tc := TierConfig{Rate: strings.Join(args[:i], ",")}
	if _, err := contract.ParseRates(tc.Rate); err != nil {
		return TierConfig{}, err
	}
	if i < len(args) && args[i] == costWord {
		if i+1 == len(args) {
			return TierConfig{}, errors.New("cost: want one rate in points per window, e.g. cost 50000/h")
		}
		if _, err := contract.ParseRate(args[i+1]); err != nil {
			return TierConfig{}, fmt.Errorf("cost: %w", err)
		}
		tc.CostBudget = args[i+1]
		i += 2
	}
	for _, f := range args[i:] {
		switch {
		case f == costWord && tc.CostBudget != "":
			return TierConfig{}, errors.New("cost given twice")
		case f == costWord:
			return TierConfig{}, errors.New("cost must come after the rates and before the families (no family may be named cost)")
		case strings.Contains(f, "/") && tc.CostBudget != "" && len(tc.Families) == 0:
			return TierConfig{}, fmt.Errorf("cost takes exactly one rate, got also %q", f)
		case strings.Contains(f, "/"):
			return TierConfig{}, fmt.Errorf("rate %q after the families: rates come first (a family name never holds '/')", f)
		}
		tc.Families = append(tc.Families, f)
	}
	return tc, nil
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
		if !familyRE.MatchString(f) || f == costWord {
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
