package contract

import (
	"errors"
	"fmt"
	"strings"
)

// Tier lines (docs/design.md D6, D11, D27) are
//
//	tier <name> <rate>... [cost <rate>] [<family>...]
//
// e.g. `tier paid_beta 100/m 20000/d cost 50000/h bills members`. The rates
// are the tokens holding '/' before `cost` and the families (a family name
// never holds '/'), one to MaxRatesPerTier of them, each window
// once (ParseRates); `cost` takes exactly one rate, the tier's cost
// budget in GraphQL cost points per window; no family may be named `cost`.

// TierCostWord introduces a tier's cost budget on its line; no family may
// be named so.
const TierCostWord = "cost"

// TierLine is a tier line's arguments after the tier name.
type TierLine struct {
	// Rates as written, comma-separated (one rate stays exactly as written).
	Rates string
	// CostBudget as written, "" without one.
	CostBudget string
	Families   []string
}

// ParseTierLine reads the arguments of a tier line after its name. The
// errors name no tier: the caller adds it. civic_auth and civic_webhooks
// both read tier lines with it (they import the same tiers.caddy).
func ParseTierLine(args []string) (TierLine, error) {
	i := 0
	for i < len(args) && strings.Contains(args[i], "/") {
		i++
	}
	if i == 0 {
		if len(args) > 0 && args[0] == TierCostWord {
			return TierLine{}, errors.New("want at least one rate (<quota>/<window>, e.g. 100/m) before cost")
		}
		if len(args) == 0 {
			return TierLine{}, errors.New("want at least one rate (<quota>/<window>, e.g. 100/m)")
		}
		_, err := ParseRate(args[0]) // a first argument without '/' is a mistyped rate
		return TierLine{}, err
	}
	tc := TierLine{Rates: strings.Join(args[:i], ",")}
	if _, err := ParseRates(tc.Rates); err != nil {
		return TierLine{}, err
	}
	if i < len(args) && args[i] == TierCostWord {
		if i+1 == len(args) {
			return TierLine{}, errors.New("cost: want one rate in points per window, e.g. cost 50000/h")
		}
		if _, err := ParseRate(args[i+1]); err != nil {
			return TierLine{}, fmt.Errorf("cost: %w", err)
		}
		tc.CostBudget = args[i+1]
		i += 2
	}
	for _, f := range args[i:] {
		switch {
		case f == TierCostWord && tc.CostBudget != "":
			return TierLine{}, errors.New("cost given twice")
		case f == TierCostWord:
			return TierLine{}, errors.New("cost must come after the rates and before the families (no family may be named cost)")
		case strings.Contains(f, "/") && tc.CostBudget != "" && len(tc.Families) == 0:
			return TierLine{}, fmt.Errorf("cost takes exactly one rate, got also %q", f)
		case strings.Contains(f, "/"):
			return TierLine{}, fmt.Errorf("rate %q after the families: rates come first (a family name never holds '/')", f)
		}
		tc.Families = append(tc.Families, f)
	}
	return tc, nil
}
