package ratelimit

import (
	"strconv"
	"strings"
	"sync"

	"github.com/civicgate/civicgate/internal/rediskey"
	"github.com/civicgate/civicgate/modules/contract"
)

// policySet is what one decision checks: a tier's rates (its request
// policies) or its cost budget, with every string a request needs built
// once.
type policySet struct {
	rates []contract.Rate
	names []string // each policy's name as a structured-field string
	plain []string // each policy's name as written (quota crossings)
	// header is the RateLimit-Policy members of the set: "<name>";q=…;w=…, …
	header string
	// prefix of the store key in memory and the lease cache: name:rates:
	prefix string
	// redisParts: per policy, what follows the hash tag in its Redis key:
	// ":<name>:<quota>/<window ms>". The rate is part of the key: a rate
	// changed by reload starts from a full quota instead of reinterpreting
	// the old log.
	redisParts []string
	minQuota   int64 // the smallest quota of the set
	lease      int64 // units asked per round trip (0: no lease)
	leaseTTL   int64 // µs a lease may be spent for: the shortest window
}

// newPolicySet builds the set for a tier named name with rates. Policies are
// named name when there is one rate and name-<window> ("paid_beta-minute")
// when there are several; suffix, if not empty, is added to the name first
// ("paid_beta-cost").
func newPolicySet(name, suffix string, rates []contract.Rate, share float64, maxLease int64) *policySet {
	base := name
	if suffix != "" {
		base += "-" + suffix
	}
	s := &policySet{rates: rates, prefix: base + ":" + contract.Rates(rates) + ":"}
	members := make([]string, len(rates))
	minQuota, minWindow := rates[0].Quota, rates[0].Window.Microseconds()
	for i, r := range rates {
		n := base
		if len(rates) > 1 {
			n += "-" + contract.WindowName(r)
		}
		sf := sfString(n)
		s.names = append(s.names, sf)
		s.plain = append(s.plain, n)
		members[i] = sf + ";q=" + strconv.FormatInt(r.Quota, 10) + ";w=" + strconv.FormatInt(ceilDiv(r.Window.Microseconds(), 1e6), 10)
		s.redisParts = append(s.redisParts, ":"+n+":"+strconv.FormatInt(r.Quota, 10)+"/"+strconv.FormatInt(r.Window.Milliseconds(), 10))
		minQuota, minWindow = min(minQuota, r.Quota), min(minWindow, r.Window.Microseconds())
	}
	s.header = strings.Join(members, ", ")
	s.minQuota = minQuota
	if n := int64(float64(minQuota) * share); n >= 2 {
		if suffix != "cost" { // a cost budget's units are points, not requests: share alone bounds its leases
			n = min(n, maxLease)
		}
		s.lease, s.leaseTTL = n, minWindow
	}
	return s
}

// redisKeys are the set's Redis keys for key: prefix{key}:<policy part>, one
// hash tag so that one script call stays on one Cluster slot.
func (s *policySet) redisKeys(prefix, key string) []string {
	tag := rediskey.HashTag(key) // docs/redis.md: one slot per key
	keys := make([]string, len(s.redisParts))
	for i, p := range s.redisParts {
		keys[i] = prefix + "{" + tag + "}" + p
	}
	return keys
}

// closest is the policy of d closest to exhaustion: the smallest share of
// its quota remaining (ties: the earlier one).
func (s *policySet) closest(d *decision) int {
	best := 0
	for i := 1; i < d.n; i++ {
		if d.remaining[i]*s.rates[best].Quota < d.remaining[best]*s.rates[i].Quota {
			best = i
		}
	}
	return best
}

// refusing is the policy that refused d: among those without room for need,
// the one that frees up last.
func (s *policySet) refusing(d *decision, need int64) int {
	best := -1
	for i := 0; i < d.n; i++ {
		if d.remaining[i] >= need {
			continue
		}
		if best < 0 || d.resetAfter[i] > d.resetAfter[best] {
			best = i
		}
	}
	return max(best, 0)
}

// handlerPolicy is, per (tier name, rate list, cost budget) as a request
// resolved them, the request policies, the cost budget's (nil without one)
// and the RateLimit-Policy value advertising both.
type handlerPolicy struct {
	req    *policySet
	cost   *policySet
	header string
}

type policyKey struct {
	name, rawRate, rawCost string
}

// policyCache is bounded: it is emptied when it reaches maxPolicies (a
// placeholder policy or rate could take many values).
type policyCache struct {
	mu       sync.RWMutex
	m        map[policyKey]*handlerPolicy
	share    float64
	maxLease int64
}

const maxPolicies = 1024

// get returns the entry for a policy name, a rate list and a cost budget as
// written ("" for none), parsing them on a miss (what does not parse is not
// cached).
func (c *policyCache) get(name, rawRate, rawCost string) (*handlerPolicy, error) {
	k := policyKey{name: name, rawRate: rawRate, rawCost: rawCost}
	c.mu.RLock()
	p := c.m[k]
	c.mu.RUnlock()
	if p != nil {
		return p, nil
	}
	rates, err := contract.ParseRates(rawRate)
	if err != nil {
		return nil, err
	}
	p = &handlerPolicy{req: newPolicySet(name, "", rates, c.share, c.maxLease)}
	p.header = p.req.header
	if rawCost != "" {
		budget, err := contract.ParseRate(rawCost)
		if err != nil {
			return nil, err
		}
		p.cost = newPolicySet(name, "cost", []contract.Rate{budget}, c.share, c.maxLease)
		p.header += ", " + p.cost.header
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxPolicies {
		c.m = make(map[policyKey]*handlerPolicy)
	}
	c.m[k] = p
	c.mu.Unlock()
	return p, nil
}
