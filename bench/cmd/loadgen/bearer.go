package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
)

// bearers is where one target's Authorization: Bearer values come from:
// the key of LOADGEN_BEARER (--auth), or the access tokens of a file
// (--bearer-file), cycled per request so a handful of tokens stay in the
// gateway's verification cache as a production client's do; with once
// (--bearer-once) every token is sent once over the whole run, so each
// request brings a token the gateway has never verified.
type bearers struct {
	values []string
	once   bool
	next   atomic.Int64 // once: the next unused value
}

// errBearersUsedUp fails a request of a --bearer-once target once every
// token of its file has been sent: a reused token would be a cache hit.
var errBearersUsedUp = errors.New("every first-seen token has been sent (make the token file longer)")

// value is the bearer of a connection's i-th request.
func (b *bearers) value(i int) (string, error) {
	if !b.once {
		return b.values[i%len(b.values)], nil
	}
	n := b.next.Add(1) - 1
	if n >= int64(len(b.values)) {
		return "", errBearersUsedUp
	}
	return b.values[n], nil
}

// used is how many values a once source has handed out (capped at its size).
func (b *bearers) used() int { return int(min(b.next.Load(), int64(len(b.values)))) }

// readBearerFile reads tokens, one a line (blank lines skipped). The file's
// content never appears in an error: only its name and line numbers.
func readBearerFile(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bearer file: %w", err)
	}
	var out []string
	for n, line := range bytes.Split(b, []byte("\n")) {
		s := strings.TrimSpace(string(line))
		if s == "" {
			continue
		}
		if strings.ContainsAny(s, " \t\r") {
			return nil, fmt.Errorf("bearer file %s: line %d is not one token", path, n+1)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("bearer file %s: no token", path)
	}
	return out, nil
}
