package contract

import (
	"testing"
	"time"
)

// TestParseRate: the rate syntax — civic_rate_limit's since its first
// version (N/s, N/m, N/h, N/d and N/<duration>), which civic_auth's tier
// lines and failed_lookups now read too.
func TestParseRate(t *testing.T) {
	for in, want := range map[string]Rate{
		"100/m": {100, time.Minute}, "10/s": {10, time.Second}, "1000/h": {1000, time.Hour},
		"5/2s": {5, 2 * time.Second}, "7/d": {7, 24 * time.Hour}, "100/d": {100, 24 * time.Hour},
		"20/m": {20, time.Minute}, "3600/h": {3600, time.Hour}, "60/min": {60, time.Minute}, "2/day": {2, 24 * time.Hour},
		" 3/m ": {3, time.Minute}, "90/1m30s": {90, 90 * time.Second}, "1000000000/h": {MaxQuota, time.Hour}, "1000000/s": {1_000_000, time.Second},
		"1/1ms": {1, time.Millisecond},
	} {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "100", "0/m", "-1/s", "x/m", "10/fortnight", "10/0s", "2000000/ms", "1.5/s",
		"m", "/m", "3/", "1/1ns", "1000000001/d", "1000000000/s", "99999999999/s", "9999999999999999999/m", "3 /m", "10/-1s"} {
		if r, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) = %v, accepted", bad, r)
		}
	}
}

func TestRateString(t *testing.T) {
	for in, want := range map[string]string{"100/m": "100/m", "60/minute": "60/m", "7/day": "7/d", "1/24h": "1/d",
		"5/2s": "5/2s", "90/1m30s": "90/1m30s", " 10/s": "10/s", "3/1h0m0s": "3/h"} {
		r, err := ParseRate(in)
		if err != nil || r.String() != want {
			t.Errorf("ParseRate(%q).String() = %q (%v), want %q", in, r.String(), err, want)
		}
	}
}

// FuzzParseRate: no input panics, and an accepted rate is usable — a quota
// in 1..MaxQuota, a window of at least 1 ms and at most one request per
// microsecond — and its String form
// parses back to the same rate.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"100/m", "10/s", "1000/h", "5/2s", "7/d", "1/1ns", "1000000000/s", "0/m", " 3/m ", "3/", "/m", "9999999999999999999/m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			return
		}
		if r.Quota < 1 || r.Quota > MaxQuota || r.Window < time.Millisecond || r.Window.Microseconds()/r.Quota < 1 {
			t.Fatalf("ParseRate(%q) = %+v", s, r)
		}
		back, err := ParseRate(r.String())
		if err != nil || back != r {
			t.Fatalf("ParseRate(%q) = %v, but its String %q parses to %v, %v", s, r, r.String(), back, err)
		}
	})
}

func TestParseRates(t *testing.T) {
	for in, want := range map[string]string{"100/m": "100/m", "100/m 20000/d": "100/m,20000/d",
		"100/m,20000/d": "100/m,20000/d", " 10/s , 100/m\t1000/h 5/d": "10/s,100/m,1000/h,5/d"} {
		rs, err := ParseRates(in)
		if err != nil || Rates(rs) != want {
			t.Errorf("ParseRates(%q) = %v, %v; want %s", in, rs, err, want)
		}
	}
	for _, bad := range []string{"", " , ", "100/m 10/60s", "1/s 2/m 3/h 4/d 5/2s", "100/m fast", "100/m,,0/s"} {
		if rs, err := ParseRates(bad); err == nil {
			t.Errorf("ParseRates(%q) = %v, accepted", bad, rs)
		}
	}
}

func TestWindowName(t *testing.T) {
	for in, want := range map[string]string{"1/s": "second", "1/m": "minute", "1/h": "hour", "1/d": "day",
		"1/90s": "90s", "1/1500ms": "1500ms", "1/2h": "7200s"} {
		r, _ := ParseRate(in)
		if got := WindowName(r); got != want {
			t.Errorf("WindowName(%s) = %q, want %q", in, got, want)
		}
	}
}
