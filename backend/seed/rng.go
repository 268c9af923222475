package seed

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// rng is a deterministic random source: the same (seed, stream) always yields the same sequence, so
// every load task can run in parallel and still produce identical rows.
type rng struct{ *rand.Rand }

func newRNG(seed uint64, stream uint64) rng {
	return rng{rand.New(rand.NewPCG(seed, stream*0x9E3779B97F4A7C15+1))}
}

// pick returns a uniformly chosen element.
func pick[T any](r rng, xs []T) T { return xs[r.IntN(len(xs))] }

// zipf returns an index in [0,n) biased towards 0 (earlier entries are more common).
func (r rng) zipf(n int) int {
	u := r.Float64()
	return int(float64(n) * u * u * u)
}

// chance reports true with probability p.
func (r rng) chance(p float64) bool { return r.Float64() < p }

// uuid4 returns a random (version 4) UUID string.
func (r rng) uuid4() string {
	a, b := r.Uint64(), r.Uint64()
	a = (a &^ 0xF000) | 0x4000           // version 4
	b = (b &^ (0xC << 60)) | (0x8 << 60) // variant 10
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", a>>32, (a>>16)&0xFFFF, a&0xFFFF, b>>48, b&0xFFFFFFFFFFFF)
}

// congressStart is noon, Jan 3 of the first year of Congress n (20th Amendment; upstream-formats.md).
func congressStart(n int) time.Time {
	return time.Date(1787+2*n, time.January, 3, 0, 0, 0, 0, time.UTC)
}

// congressOf is the Congress in session on day d.
func congressOf(d time.Time) int {
	c := (d.Year() - 1787) / 2
	if d.Year()%2 == 1 && d.Month() == time.January && d.Day() < 3 {
		c--
	}
	return c
}

// congressForFiscalYear is the Congress in session on Oct 1 of FY-1.
func congressForFiscalYear(fy int) int { return (fy - 1788) / 2 }

func day(t time.Time) time.Time { return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC) }

func strp(s string) *string { return &s }
