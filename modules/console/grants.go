package console

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

// grantView is an organization's grant in force as the console shows it
// beside its tier's figures (docs/design.md D81): the figures as granted,
// each named with the window of the tiers it applies to, and its end. The
// console does not compute the raised quotas of every window: that policy
// is civic_auth's (one implementation), and these are the figures the
// operator granted.
type grantView struct {
	Until time.Time
	Lines []string
}

// activeGrant returns the grant in force at now of the organization orgID
// (nil: none), worded for the tiers of its usable keys. orgID is always the
// organization the page is of, never a value of the request.
func (h *Handler) activeGrant(ctx context.Context, orgID string, tiers []string, now time.Time) (*grantView, error) {
	grants, err := keystore.OrgGrants(ctx, h.pool, []string{orgID})
	if err != nil {
		return nil, err
	}
	g, ok := grants[orgID]
	if !ok || (g.Requests == 0 && g.Cost == 0) || !g.Active(now) {
		return nil, nil
	}
	return &grantView{Until: g.Until, Lines: h.grantLines(g, tiers)}, nil
}

// grantLines words g per tier: --requests is the quota of the tier's first
// rate (its other windows grow in proportion), --cost the budget's points
// per its window; a tier without a budget gets none.
func (h *Handler) grantLines(g keystore.Grant, tiers []string) []string {
	var out []string
	if g.Requests > 0 {
		var parts []string
		for _, t := range tiers {
			if tc, ok := h.tiers[t]; ok && len(tc.Rates) > 0 {
				parts = append(parts, fmt.Sprintf("%s per %s for tier %s", groupDigits(g.Requests), contract.WindowName(tc.Rates[0]), t))
			}
		}
		if len(parts) == 0 {
			parts = append(parts, groupDigits(g.Requests)+" per the tier's first window")
		}
		out = append(out, "Request quota: "+strings.Join(parts, ", ")+" (the tier's other windows in proportion)")
	}
	if g.Cost > 0 {
		for _, t := range tiers {
			tc, ok := h.tiers[t]
			switch {
			case !ok:
			case tc.Cost == nil:
				out = append(out, "Cost budget: tier "+t+" has none, so the grant gives none")
			default:
				out = append(out, fmt.Sprintf("Cost budget: %s points per %s for tier %s", groupDigits(g.Cost), contract.WindowName(*tc.Cost), t))
			}
		}
		if len(tiers) == 0 {
			out = append(out, "Cost budget: "+groupDigits(g.Cost)+" points per the tier's budget window")
		}
	}
	return out
}
