package accesstoken

import "time"

// Stats are a Verifier's counters since New, for the shell's metrics.
type Stats struct {
	// Verified counts tokens admitted by a full verification; CacheHits
	// tokens admitted from the verification cache.
	Verified, CacheHits uint64
	// Refused counts refusals by Kind (index by Kind; index 0 is unused).
	Refused [numKinds]uint64
	// VerifyWaits counts verifications that waited for a slot
	// (MaxConcurrent were running).
	VerifyWaits uint64
	// CacheEntries is the verification cache's size; CacheEvictions the
	// entries its bound evicted.
	CacheEntries   int
	CacheEvictions uint64

	// KeySetRefreshes counts successful key set fetches (the first
	// included), KeySetRefreshFailures failed ones (the last good set
	// stayed in use), KeySetRefreshesRateLimited unknown kids that found a
	// refresh less than JWKSRefreshMinInterval old and were refused.
	KeySetRefreshes, KeySetRefreshFailures, KeySetRefreshesRateLimited uint64
	// Keys and KeysIgnored are the current set's usable and ignored keys.
	Keys, KeysIgnored int
	// KeySetFetched is when the current set was fetched; KeySetRefreshDue
	// when a background refresh is next wanted.
	KeySetFetched, KeySetRefreshDue time.Time
}

// Kinds lists every Kind, for labelling Stats.Refused.
func Kinds() []Kind {
	out := make([]Kind, 0, numKinds-1)
	for k := Kind(1); k < numKinds; k++ {
		out = append(out, k)
	}
	return out
}

// Stats returns the counters now.
func (v *Verifier) Stats() Stats {
	s := Stats{
		Verified:                   v.verified.Load(),
		CacheHits:                  v.hits.Load(),
		VerifyWaits:                v.waits.Load(),
		KeySetRefreshes:            v.keys.refreshes.Load(),
		KeySetRefreshFailures:      v.keys.failures.Load(),
		KeySetRefreshesRateLimited: v.keys.rateLimited.Load(),
		KeySetFetched:              time.Unix(0, v.keys.fetched.Load()),
		KeySetRefreshDue:           time.Unix(0, v.keys.due.Load()),
	}
	for k := range s.Refused {
		s.Refused[k] = v.refused[k].Load()
	}
	if set := v.keys.set.Load(); set != nil {
		s.Keys, s.KeysIgnored = len(set.all), set.ignored
	}
	v.mu.Lock()
	s.CacheEntries, s.CacheEvictions = v.cache.Len(), v.cache.Evictions()
	v.mu.Unlock()
	return s
}
