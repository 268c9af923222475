package clirun

import (
	"testing"
	"time"
)

func TestDaysOrDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"90m", 90 * time.Minute, true}, {"24h", 24 * time.Hour, true}, {"7d", 7 * 24 * time.Hour, true},
		{"0", 0, true}, {"0d", 0, true}, {"366d", 366 * 24 * time.Hour, true},
		{"367d", 0, false}, {"-1h", -time.Hour, true}, {"-1d", -24 * time.Hour, true}, {"+1d", 0, false}, {"d", 0, false}, {"-d", 0, false},
		{"1.5d", 0, false}, {"7 d", 0, false}, {"", 0, false}, {"forever", 0, false}, {"9999999999d", 0, false},
	} {
		got, ok := DaysOrDuration(tc.in, 366)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%q: %v %v, want %v %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
