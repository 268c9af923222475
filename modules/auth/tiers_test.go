package auth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

// mustTier is newTierPolicy for a configuration the test knows is valid.
func mustTier(tb testing.TB, name string, tc TierConfig) *tierPolicy {
	tb.Helper()
	t, err := newTierPolicy(name, tc)
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// TestParseTierLine: `tier <name> <rate>... [cost <rate>] [<family>...]`
// into the JSON form, and every way a line can be wrong.
func TestParseTierLine(t *testing.T) {
	for line, want := range map[string]TierConfig{
		"30/m bills": {Rate: "30/m", Families: []string{"bills"}},
		"30/min":     {Rate: "30/min"}, // one rate: exactly as written, as before
		"100/m 20000/d cost 50000/h bills members":  {Rate: "100/m,20000/d", CostBudget: "50000/h", Families: []string{"bills", "members"}},
		"100/m,20000/d bills":                       {Rate: "100/m,20000/d", Families: []string{"bills"}},
		"1/s 100/m 5000/h 20000/d":                  {Rate: "1/s,100/m,5000/h,20000/d"},
		"100/m cost 50000/h":                        {Rate: "100/m", CostBudget: "50000/h"},
		"100/m cost 7/90s changes":                  {Rate: "100/m", CostBudget: "7/90s", Families: []string{"changes"}},
		"100/m costs":                               {Rate: "100/m", Families: []string{"costs"}},
		"100/m 20000/d cost 50000/h cost_center x1": {Rate: "100/m,20000/d", CostBudget: "50000/h", Families: []string{"cost_center", "x1"}},
	} {
		got, err := parseTierLine(strings.Fields(line))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %+v %v, want %+v", line, got, err, want)
		}
	}
	for line, msg := range map[string]string{
		"lots bills":                      `rate "lots": want <quota>/<window>`,
		"cost 5/h bills":                  "want at least one rate (<quota>/<window>, e.g. 100/m) before cost",
		"0/m bills":                       `rate "0/m": quota must be a positive integer`,
		"100/m 20/min":                    `rate list "100/m,20/min": two quotas over 1m0s`,
		"1/s 2/m 3/h 4/d 5/2d":            `rate list "1/s,2/m,3/h,4/d,5/2d": more than 4 rates`,
		"100/m cost":                      "cost: want one rate in points per window, e.g. cost 50000/h",
		"100/m cost bills":                `cost: rate "bills": want <quota>/<window>`,
		"100/m cost 0/h":                  `cost: rate "0/h": quota must be a positive integer`,
		"100/m cost 5/h 6/d bills":        `cost takes exactly one rate, got also "6/d"`,
		"100/m cost 5/h cost 6/h":         "cost given twice",
		"100/m bills cost 5/h":            "cost must come after the rates and before the families (no family may be named cost)",
		"100/m bills 20000/d":             `rate "20000/d" after the families: rates come first`,
		"100/m cost 5/h bills 20000/d":    `rate "20000/d" after the families`,
		"100/m cost 5/h bills cost":       "cost given twice",
		"100/m cost 2000000/s bills":      `cost: rate "2000000/s": more than one request per microsecond`,
		"100/m 20000/d cost 5/h bills //": `rate "//" after the families`,
	} {
		_, err := parseTierLine(strings.Fields(line))
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: error %v, want one containing %q", line, err, msg)
		}
	}
}

// TestTierPolicyValues: {civic.rate} is the rate list in contract.Rates'
// form (a single rate as before), {civic.cost_budget} the budget's
// Rate.String() or "".
func TestTierPolicyValues(t *testing.T) {
	for _, c := range []struct {
		tc         TierConfig
		rate, cost string
	}{
		{TierConfig{Rate: "100/m"}, "100/m", ""},
		{TierConfig{Rate: "1000/m", Families: []string{"bills"}}, "1000/m", ""},
		{TierConfig{Rate: "100/m,20000/d"}, "100/m,20000/d", ""},
		{TierConfig{Rate: "100/m 20000/d", CostBudget: "50000/h"}, "100/m,20000/d", "50000/h"}, // the JSON may space them
		{TierConfig{Rate: "30/minute", CostBudget: "50000/hour"}, "30/m", "50000/h"},
		{TierConfig{Rate: "5/2s", CostBudget: "7/90s"}, "5/2s", "7/1m30s"},
	} {
		p := mustTier(t, "paid", c.tc)
		if p.rateVal != c.rate || p.costVal != c.cost {
			t.Errorf("%+v: rate %v cost %v, want %q %q", c.tc, p.rateVal, p.costVal, c.rate, c.cost)
		}
		if _, err := contract.ParseRates(p.rateVal.(string)); err != nil {
			t.Errorf("%+v: published rate %v does not parse back: %v", c.tc, p.rateVal, err)
		}
	}
}

// TestTierPolicyRefusals: what the JSON configuration may not hold,
// refused at provision with the tier's name.
func TestTierPolicyRefusals(t *testing.T) {
	for name, c := range map[string]struct {
		tc  TierConfig
		msg string
	}{
		"no rate":          {TierConfig{}, `tier paid: rate list ""`},
		"bad rate":         {TierConfig{Rate: "fast"}, `tier paid: rate "fast"`},
		"same window":      {TierConfig{Rate: "100/m,200/60s"}, "tier paid: rate list"},
		"too many rates":   {TierConfig{Rate: "1/s,2/m,3/h,4/d,5/2d"}, "more than 4 rates"},
		"bad cost":         {TierConfig{Rate: "1/m", CostBudget: "lots"}, `tier paid: cost: rate "lots"`},
		"two costs":        {TierConfig{Rate: "1/m", CostBudget: "5/h,6/d"}, `tier paid: cost: rate "5/h,6/d"`},
		"family cost":      {TierConfig{Rate: "1/m", Families: []string{"bills", "cost"}}, `tier paid: bad family "cost"`},
		"family with rate": {TierConfig{Rate: "1/m", Families: []string{"20000/d"}}, `tier paid: bad family "20000/d"`},
	} {
		if _, err := newTierPolicy("paid", c.tc); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: error %v, want one containing %q", name, err, c.msg)
		}
	}
}

// TestTierPlaceholdersPublished: through the handler, a tier with several
// rates and a cost budget publishes both, and a cached-key request still
// allocates no more than TestKeyInURLCheckDoesNotAllocate allows; a tier
// without a budget publishes {civic.cost_budget} as "".
func TestTierPlaceholdersPublished(t *testing.T) {
	a, _ := unitApp(t, indexStore(map[keystore.Hash]keystore.Record{keystore.HashKey(wellFormed): activeRecord}), "")
	for _, c := range []struct {
		tc         TierConfig
		rate, cost string
	}{
		{TierConfig{Rate: "100/m 20000/d", CostBudget: "50000/h", Families: []string{"bills"}}, "100/m,20000/d", "50000/h"},
		{TierConfig{Rate: "1000/m", Families: []string{"bills"}}, "1000/m", ""},
	} {
		a.tiers = map[string]*tierPolicy{"enterprise": mustTier(t, "enterprise", c.tc)}
		a.cache.flush()
		h := &Handler{RequireFamily: "bills", app: a, logger: zap.NewNop()}
		repl := caddy.NewReplacer()
		r := httptest.NewRequest(http.MethodPost, "/v1/graphql", nil)
		r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
		auth := []string{"Bearer " + wellFormed}
		w := &discardWriter{h: http.Header{}}
		next := nextFunc(func(http.ResponseWriter, *http.Request) error { return nil })
		r.Header["Authorization"] = auth
		if err := h.ServeHTTP(w, r, next); err != nil {
			t.Fatal(err)
		}
		rate, _ := repl.Get(contract.CivicRate)
		cost, ok := repl.Get(contract.CivicCostBudget)
		if rate != c.rate || cost != c.cost || !ok {
			t.Errorf("%+v: {civic.rate} %v, {civic.cost_budget} %v (set %v), want %q %q", c.tc, rate, cost, ok, c.rate, c.cost)
		}
		n := testing.AllocsPerRun(200, func() {
			r.Header["Authorization"] = auth
			_ = h.ServeHTTP(w, r, next)
		})
		if n > 2 {
			t.Errorf("%+v: cached-key request %v allocations, want ≤ 2", c.tc, n)
		}
	}
}
