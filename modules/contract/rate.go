package contract

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxQuota is the largest quota a rate may have.
const MaxQuota = 1_000_000_000

// Rate is a quota of requests per window: a burst of Quota, then Quota per
// Window (docs/design.md D11). civic_auth's tier lines publish one as
// {civic.rate}; civic_rate_limit enforces it; civic_auth's failed_lookups
// limit is one too.
type Rate struct {
	Quota  int64
	Window time.Duration
}

// ParseRate parses the one rate syntax of civicgate, "<quota>/<window>":
//
//   - quota: a positive integer up to MaxQuota;
//   - window: s, m, h or d (also sec, second, min, minute, hour, day), or a
//     Go duration of at least 1ms (5/2s, 90/1m30s);
//   - at most one request per microsecond (quota ≤ window in µs).
//
// Surrounding spaces are ignored. Tier lines, failed_lookups and
// civic_rate_limit's rate all read this syntax, so every rate one of them
// accepts the others accept too (docs/design.md D11).
func ParseRate(s string) (Rate, error) {
	q, w, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Rate{}, fmt.Errorf("rate %q: want <quota>/<window>, e.g. 100/m", s)
	}
	quota, err := strconv.ParseInt(q, 10, 64)
	if err != nil || quota < 1 {
		return Rate{}, fmt.Errorf("rate %q: quota must be a positive integer", s)
	}
	if quota > MaxQuota {
		return Rate{}, fmt.Errorf("rate %q: quota over %d", s, MaxQuota)
	}
	var window time.Duration
	switch w {
	case "s", "sec", "second":
		window = time.Second
	case "m", "min", "minute":
		window = time.Minute
	case "h", "hour":
		window = time.Hour
	case "d", "day":
		window = 24 * time.Hour
	default:
		window, err = time.ParseDuration(w)
		if err != nil || window < time.Millisecond {
			return Rate{}, fmt.Errorf("rate %q: unknown window %q", s, w)
		}
	}
	if window.Microseconds() < quota {
		return Rate{}, fmt.Errorf("rate %q: more than one request per microsecond", s)
	}
	return Rate{Quota: quota, Window: window}, nil
}

// String writes r in the form ParseRate reads back: 100/m, 7/d, 5/2s.
func (r Rate) String() string {
	q := strconv.FormatInt(r.Quota, 10)
	switch r.Window {
	case time.Second:
		return q + "/s"
	case time.Minute:
		return q + "/m"
	case time.Hour:
		return q + "/h"
	case 24 * time.Hour:
		return q + "/d"
	}
	return q + "/" + r.Window.String()
}
