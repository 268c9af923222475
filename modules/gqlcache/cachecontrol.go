package gqlcache

import (
	"strconv"
	"strings"
)

// cacheControl is what the cache reads of a Cache-Control header.
type cacheControl struct {
	noStore, noCache, private bool
	maxAge, sMaxAge           int64 // -1: absent
}

// parseCacheControl reads the directives of the header's values.
func parseCacheControl(values []string) cacheControl {
	cc := cacheControl{maxAge: -1, sMaxAge: -1}
	for _, v := range values {
		for v != "" {
			var d string
			d, v, _ = strings.Cut(v, ",")
			name, arg, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-store":
				cc.noStore = true
			case "no-cache":
				cc.noCache = true
			case "private":
				cc.private = true
			case "max-age":
				cc.maxAge = parseSeconds(arg)
			case "s-maxage":
				cc.sMaxAge = parseSeconds(arg)
			}
		}
	}
	return cc
}

// parseSeconds reads a delta-seconds argument; a bad one is 0 (RFC 9111
// 4.2.1: treat an invalid freshness as stale).
func parseSeconds(arg string) int64 {
	n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(arg), `"`), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
