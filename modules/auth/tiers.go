package auth

import (
	"fmt"
	"math"
	"strings"

	"github.com/civicgate/civicgate/modules/auth/keystore"
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
	rates       []contract.Rate
	cost        contract.Rate // Quota 0: no cost budget
	rateVal     any           // contract.Rates of the tier's rates: {civic.rate}
	costVal     any           // the cost budget's Rate.String(), "" without one: {civic.cost_budget}
	familiesStr string        // the families joined with commas: {civic.families}
	familiesVal any           // familiesStr, boxed once
}

// newTierPolicy validates one tier of the JSON configuration.
func newTierPolicy(name string, tc TierConfig) (*tierPolicy, error) {
	rates, err := contract.ParseRates(tc.Rate)
	if err != nil {
		return nil, fmt.Errorf("tier %s: %w", name, err)
	}
	cost := ""
	var budget contract.Rate
	if tc.CostBudget != "" {
		r, err := contract.ParseRate(tc.CostBudget)
		if err != nil {
			return nil, fmt.Errorf("tier %s: cost: %w", name, err)
		}
		cost, budget = r.String(), r
	}
	for _, f := range tc.Families {
		if !familyRE.MatchString(f) || f == contract.TierCostWord {
			return nil, fmt.Errorf("tier %s: bad family %q", name, f)
		}
	}
	fams := strings.Join(tc.Families, ",")
	return &tierPolicy{
		name: name, families: tc.Families, rates: rates, cost: budget,
		rateVal: contract.Rates(rates), costVal: cost, familiesStr: fams, familiesVal: fams,
	}, nil
}

// tierOf is the tier a key's record gets its policy from (nil: a tier this
// configuration does not define). The request path (newEntry) and the
// recheck of watched keys (recheck.go) both go through it.
func (a *App) tierOf(rec keystore.Record) *tierPolicy { return a.tiers[rec.Tier] }

// familiesOf is the families of tier t as {civic.families} publishes them
// and a credential watch reports them (contract.EntitlementWatch): "" for
// a tier this configuration does not define.
func familiesOf(t *tierPolicy) string {
	if t == nil {
		return ""
	}
	return t.familiesStr
}

func (t *tierPolicy) entitled(family string) bool {
	for _, f := range t.families {
		if f == family {
			return true
		}
	}
	return false
}

// granted is the tier's {civic.rate} and {civic.cost_budget} under an
// organization's grant (docs/design.md D81): requests (0: none) becomes the
// quota of the first rate and every other rate grows in proportion; cost
// (0: none) becomes the budget's points per its window. A grant never lowers
// a figure, and a tier without a cost budget gets none from a grant (there
// is nothing to raise: it has no budget).
func (t *tierPolicy) granted(requests, cost int64) (rateVal, costVal any) {
	rateVal, costVal = t.rateVal, t.costVal
	if requests > t.rates[0].Quota {
		rates := make([]contract.Rate, len(t.rates))
		scale := float64(requests) / float64(t.rates[0].Quota)
		for i, r := range t.rates {
			rates[i] = contract.Rate{Quota: raised(r, math.Ceil(float64(r.Quota)*scale)), Window: r.Window}
		}
		rateVal = contract.Rates(rates)
	}
	if t.cost.Quota > 0 && cost > t.cost.Quota {
		costVal = contract.Rate{Quota: raised(t.cost, float64(cost)), Window: t.cost.Window}.String()
	}
	return rateVal, costVal
}

// raised is quota for r's window, within what contract.ParseRate reads back
// (MaxQuota, one per microsecond) and never below r's own.
func raised(r contract.Rate, quota float64) int64 {
	limit := min(contract.MaxQuota, r.Window.Microseconds())
	if quota >= float64(limit) {
		return max(limit, r.Quota)
	}
	return max(int64(quota), r.Quota)
}
