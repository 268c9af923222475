package clirun

import (
	"strings"
	"time"
)

// DaysOrDuration reads what the commands' duration flags take: a Go
// duration ("90m", "24h") or a whole number of days ("7d", "-7d", at most
// maxDays either way). ok is false for anything else; the sign is the
// caller's to check, so it can say that a value must be positive.
func DaysOrDuration(s string, maxDays int) (d time.Duration, ok bool) {
	if n, isDays := strings.CutSuffix(s, "d"); isDays {
		n, negative := strings.CutPrefix(n, "-")
		if n == "" || len(n) > 9 || strings.Trim(n, "0123456789") != "" {
			return 0, false
		}
		days := 0
		for _, c := range n {
			days = days*10 + int(c-'0')
		}
		if days > maxDays {
			return 0, false
		}
		if negative {
			days = -days
		}
		return time.Duration(days) * 24 * time.Hour, true
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}
