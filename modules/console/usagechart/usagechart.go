// Package usagechart turns the per-key usage rows of
// modules/ratelimit/usage into what the organization console shows: a dense,
// gap-filled series of hour or day buckets (Bucket), a server-rendered,
// dependency-free, accessible SVG chart of that series (SVG, HTML) that needs
// no JavaScript, no inline style and no inline script, so it is served under a
// strict Content-Security-Policy, and a CSV download of the rows guarded
// against spreadsheet formula injection (CSV).
package usagechart

import (
	"time"

	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// MaxBuckets bounds the series Bucket returns: a longer range is cut after
// MaxBuckets buckets, so a caller passing a huge range cannot make it
// allocate without bound.
const MaxBuckets = 100_000

// Point is the sum of the counts of the rows whose start falls in the bucket
// [Start, Start+step).
type Point struct {
	Start time.Time // UTC
	usage.Delta
}

// Bucket sums rows into a dense series of buckets of size step covering
// [from, to): one Point per bucket, in order, zero where no row falls, so gaps
// show as empty bars. Buckets are aligned to step in UTC (from is truncated):
// a 24h step gives UTC days, an hour step UTC hours. keyID "" sums every key;
// otherwise only that key's rows count. Rows starting before from or at or
// after to are ignored. It returns nil when step <= 0 or to is not after from,
// and at most MaxBuckets points. It runs in O(len(rows) + buckets).
func Bucket(rows []usage.Row, keyID string, from, to time.Time, step time.Duration) []Point {
	if step <= 0 || !from.Before(to) {
		return nil
	}
	start := from.UTC().Truncate(step)
	span := to.Sub(start) // saturates for absurd ranges; n is capped below
	n := int64(span / step)
	if span%step != 0 {
		n++
	}
	end := to
	if n > MaxBuckets {
		n = MaxBuckets
		end = start.Add(time.Duration(n) * step)
	}
	pts := make([]Point, n)
	for i := range pts {
		pts[i].Start = start.Add(time.Duration(i) * step)
	}
	// Offsets from start are computed from Unix seconds and nanoseconds:
	// time.Time.Sub is several times slower, and this loop is the cost of a
	// chart over many keys. Past ~146 years an offset could overflow, so such
	// a range takes Sub.
	fromD, endD := from.Sub(start), end.Sub(start)
	fast := endD < 1<<62
	startSec, startNs, endSec := start.Unix(), int64(start.Nanosecond()), int64(endD/time.Second)
	for i := range rows {
		r := &rows[i]
		if keyID != "" && r.KeyID != keyID {
			continue
		}
		var d time.Duration
		if fast {
			s := r.Start.Unix() - startSec
			if s < -1 || s > endSec {
				continue
			}
			d = time.Duration(s)*time.Second + time.Duration(int64(r.Start.Nanosecond())-startNs)
		} else {
			d = r.Start.Sub(start)
		}
		if d < fromD || d >= endD {
			continue
		}
		p := &pts[d/step]
		p.Admitted += r.Admitted
		p.Refused += r.Refused
		p.ClientErrors += r.ClientErrors
		p.ServerErrors += r.ServerErrors
		p.Cost += r.Cost
	}
	return pts
}

// split is how a bucket is drawn: the admitted requests that succeeded (not
// answered 4xx or 5xx), the errors among the admitted, and the refused.
// Inconsistent counts (more errors than admitted, negatives) are clamped to 0.
func split(d usage.Delta) (ok, errs, refused int64) {
	errs = max(d.ClientErrors, 0) + max(d.ServerErrors, 0)
	ok = max(d.Admitted-errs, 0)
	return ok, errs, max(d.Refused, 0)
}
