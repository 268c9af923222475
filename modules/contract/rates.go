package contract

import (
	"fmt"
	"strings"
)

// MaxRatesPerTier is how many rates one tier (one rate list) may hold: every
// decision checks them all in one store round trip, on fixed-size arrays.
const MaxRatesPerTier = 4

// ParseRates parses a rate list: one to MaxRatesPerTier rates in the
// ParseRate syntax, separated by commas and/or spaces ("100/m 20000/d",
// "100/m,20000/d"). Each window may appear once (two quotas over the same
// window would only ever enforce the smaller). civic_auth publishes a
// tier's list as {civic.rate} in Rates' form; civic_rate_limit enforces
// every rate of it (docs/design.md D26).
func ParseRates(s string) ([]Rate, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
	if len(fields) == 0 {
		return nil, fmt.Errorf("rate list %q: want one or more <quota>/<window>, e.g. 100/m 20000/d", s)
	}
	if len(fields) > MaxRatesPerTier {
		return nil, fmt.Errorf("rate list %q: more than %d rates", s, MaxRatesPerTier)
	}
	out := make([]Rate, 0, len(fields))
	for _, f := range fields {
		r, err := ParseRate(f)
		if err != nil {
			return nil, err
		}
		for _, o := range out {
			if o.Window == r.Window {
				return nil, fmt.Errorf("rate list %q: two quotas over %s", s, r.Window)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// Rates writes a rate list in the form ParseRates reads back and
// placeholders carry: comma-separated, no spaces ("100/m,20000/d").
func Rates(rs []Rate) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// WindowName names a window in a policy name: second, minute, hour, day, or
// the window in seconds ("90s") or milliseconds ("1500ms") otherwise.
// civic_rate_limit names each policy of a tier with several rates
// "<tier>-<window name>" ("paid_beta-minute", "paid_beta-day").
func WindowName(r Rate) string {
	switch r.Window {
	case 1e9:
		return "second"
	case 60e9:
		return "minute"
	case 3600e9:
		return "hour"
	case 86400e9:
		return "day"
	}
	if r.Window%1e9 == 0 {
		return fmt.Sprintf("%ds", int64(r.Window/1e9))
	}
	return fmt.Sprintf("%dms", r.Window.Milliseconds())
}
