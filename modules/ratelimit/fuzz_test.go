package ratelimit

import "testing"

// FuzzParseRate: no input panics, and an accepted rate is usable — a positive
// quota and window and an emission interval of at least 1 µs — and its
// String form parses back to the same rate.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"100/m", "10/s", "1000/h", "5/2s", "7/d", "1/1ns", "1000000000/s", "0/m", " 3/m ", "3/", "/m", "9999999999999999999/m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseRate(s)
		if err != nil {
			return
		}
		if r.quota < 1 || r.window <= 0 || r.interval() < 1 {
			t.Fatalf("parseRate(%q) = %+v", s, r)
		}
		back, err := parseRate(r.String())
		if err != nil || back != r {
			t.Fatalf("parseRate(%q) = %v, but its String %q parses to %v, %v", s, r, r.String(), back, err)
		}
	})
}
