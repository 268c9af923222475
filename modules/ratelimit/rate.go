package ratelimit

import "github.com/civicgate/civicgate/modules/contract"

// emissionInterval is r's GCRA emission interval in microseconds (≥ 1).
func emissionInterval(r contract.Rate) int64 {
	return max(1, r.Window.Microseconds()/r.Quota)
}

// parseRate is contract.ParseRate, the one rate syntax (kept for the
// Caddyfile's literal-rate check).
func parseRate(s string) (contract.Rate, error) {
	return contract.ParseRate(s)
}
