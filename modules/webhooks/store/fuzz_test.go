package store

import (
	"math"
	"testing"
)

// FuzzDecodeCursor: no input panics, an accepted cursor names a non-negative
// event id that encodes back to a cursor with the same meaning, and every
// encoded id decodes to itself.
func FuzzDecodeCursor(f *testing.F) {
	for _, c := range []string{"", EncodeCursor(0), EncodeCursor(42), EncodeCursor(math.MaxInt64), "!!", "Zm9v", "ZXY6LTE"} {
		f.Add(c, int64(7))
	}
	f.Fuzz(func(t *testing.T, c string, n int64) {
		if seq, err := DecodeCursor(c); err == nil {
			if seq < 0 {
				t.Fatalf("DecodeCursor(%q) = %d", c, seq)
			}
			if again, err := DecodeCursor(EncodeCursor(seq)); err != nil || again != seq {
				t.Fatalf("cursor of %d decodes to %d, %v", seq, again, err)
			}
		}
		if n >= 0 {
			if got, err := DecodeCursor(EncodeCursor(n)); err != nil || got != n {
				t.Fatalf("EncodeCursor(%d) decodes to %d, %v", n, got, err)
			}
		}
	})
}
