package ratelimit

import (
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// Quota threshold records (docs/design.md D81): after a decision, each
// policy's remaining share says whether it reached 80 % or 100 % of its
// limit; a policy below 80 % costs two multiplications, one past it a
// lookup in the usage sink's CrossingMeter (nothing is written on the
// request's path: the flush writes the crossings, once per window).

// noteCrossings reports the request policies of d (a decision on set for
// the request's key) that reached a threshold; refusing is the policy that
// refused d (-1: admitted). byOrg says the quota counts per organization
// (count per_organization), keyOwn is the handler's key otherwise.
func (h *Handler) noteCrossings(repl *caddy.Replacer, set *policySet, kind string, byOrg bool, keyOwn string, d *decision, refusing int) {
	u := h.limiter.usage
	if u == nil || u.crossings == nil || !reached(set, d, refusing) {
		return
	}
	org := orgTemplate.Expand(repl)
	if org == "" { // not a caller civic_auth identified: nobody to tell
		return
	}
	keyID := ""
	if !byOrg {
		keyID = h.keyID(repl, keyOwn)
	}
	noteCrossings(u.crossings, set, kind, org, keyID, d, refusing)
}

// reached reports whether some policy of d is at 80 % or more.
func reached(set *policySet, d *decision, refusing int) bool {
	if refusing >= 0 {
		return true
	}
	for i := 0; i < d.n; i++ {
		if usage.LevelOf(set.rates[i].Quota, d.remaining[i]) > 0 {
			return true
		}
	}
	return false
}

// noteCrossings adds to m the thresholds each policy of d reached (the
// refusing one has reached 100 %); 100 % implies 80 %, so a request that
// jumps past both reports both.
func noteCrossings(m *usage.CrossingMeter, set *policySet, kind, org, keyID string, d *decision, refusing int) {
	at := time.UnixMicro(d.at).UTC()
	for i := 0; i < d.n; i++ {
		r := set.rates[i]
		level := usage.LevelOf(r.Quota, d.remaining[i])
		if i == refusing {
			level = usage.Level100
		}
		if level == 0 {
			continue
		}
		c := usage.Crossing{OrgID: org, KeyID: keyID, Policy: set.plain[i], Kind: kind, Level: usage.Level80,
			WindowStart: usage.WindowStart(at, r.Window), Window: r.Window, Limit: r.Quota, CrossedAt: at}
		m.Add(c)
		if level == usage.Level100 {
			c.Level = level
			m.Add(c)
		}
	}
}
