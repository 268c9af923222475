package store

import "strings"

// SplitReadURLs splits DATABASE_READ_URL into its DSNs (docs/read-replicas.md "Configuration"): one DSN of any
// form pgx accepts, or several postgres:// / postgresql:// URLs separated by commas. A comma starts a new DSN only
// when a URL scheme follows it (white space around it is ignored), so a URL's own multi-host list
// (postgres://a:5432,b:5432/db) stays one DSN. Empty entries (a trailing comma) are dropped.
func SplitReadURLs(s string) []string {
	var out []string
	rest := s
	for {
		cut := nextURLStart(rest)
		entry := rest
		if cut >= 0 {
			entry = rest[:cut]
		}
		if e := strings.TrimSpace(entry); e != "" {
			out = append(out, e)
		}
		if cut < 0 {
			return out
		}
		rest = rest[cut+1:]
	}
}

// nextURLStart is the index of the first comma in s followed (after optional white space) by a postgres URL scheme
// or by nothing, or -1.
func nextURLStart(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] != ',' {
			continue
		}
		next := strings.ToLower(strings.TrimLeft(s[i+1:], " \t\r\n"))
		if next == "" || strings.HasPrefix(next, "postgres://") || strings.HasPrefix(next, "postgresql://") {
			return i
		}
	}
	return -1
}
