package ratelimit

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// rate is a quota per window, written like 100/m, 10/s, 1000/h (also 5/2s).
type rate struct {
	quota  int64
	window time.Duration
}

// interval is the GCRA emission interval in microseconds (≥ 1).
func (r rate) interval() int64 {
	return max(1, r.window.Microseconds()/r.quota)
}

func (r rate) String() string {
	return fmt.Sprintf("%d/%s", r.quota, r.window)
}

// parseRate parses "<quota>/<unit>" with unit s, m, h, d or a Go duration.
func parseRate(s string) (rate, error) {
	q, w, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return rate{}, fmt.Errorf("rate %q: want <quota>/<window>, e.g. 100/m", s)
	}
	quota, err := strconv.ParseInt(q, 10, 64)
	if err != nil || quota < 1 || quota > 1_000_000_000 {
		return rate{}, fmt.Errorf("rate %q: quota must be a positive integer", s)
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
			return rate{}, fmt.Errorf("rate %q: unknown window %q", s, w)
		}
	}
	if window.Microseconds() < quota {
		return rate{}, fmt.Errorf("rate %q: more than one request per microsecond", s)
	}
	return rate{quota: quota, window: window}, nil
}
