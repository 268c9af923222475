package usagechart

import (
	"encoding/xml"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// buf accumulates the SVG markup.
type buf struct{ b []byte }

// Write appends p (it lets xml.EscapeText write into buf).
func (w *buf) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

func (w *buf) s(s string) { w.b = append(w.b, s...) }

// f appends v rounded to one decimal, without a trailing ".0". NaN and
// infinities (which a bug upstream could produce) are written as 0 and
// values are clamped to ±1e9, so the markup stays valid whatever the counts.
func (w *buf) f(v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	t := int64(math.Round(max(min(v, 1e9), -1e9) * 10))
	if t < 0 {
		w.b = append(w.b, '-')
		t = -t
	}
	w.b = strconv.AppendInt(w.b, t/10, 10)
	if d := t % 10; d != 0 {
		w.b = append(w.b, '.', byte('0'+d))
	}
}

// esc appends s escaped as XML text or attribute value (quotes included);
// bytes that are not valid XML characters become U+FFFD.
func (w *buf) esc(s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '&' || c == '<' || c == '>' || c == '"' || c == '\'' {
			_ = xml.EscapeText(w, []byte(s)) // a buf never fails
			return
		}
	}
	w.s(s)
}

// appendGrouped appends n with a space between groups of three digits
// ("1 234 567"), as the chart's desc and tooltips read them.
func appendGrouped(b []byte, n int64) []byte {
	var tmp [24]byte
	s := strconv.AppendInt(tmp[:0], n, 10)
	if s[0] == '-' {
		b, s = append(b, '-'), s[1:]
	}
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ' ')
		}
		b = append(b, s[i])
	}
	return b
}

// grouped is appendGrouped as a string.
func grouped(n int64) string { return string(appendGrouped(nil, n)) }

// compact formats an axis value shortly: 950, 1.5k, 20M, 3B, 1T.
func compact(v float64) string {
	for _, u := range [...]struct {
		f float64
		s string
	}{{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "k"}} {
		if v >= u.f {
			return strconv.FormatFloat(math.Round(v/u.f*10)/10, 'f', -1, 64) + u.s
		}
	}
	return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
}

// niceScale picks a round tick interval (1, 2 or 5 times a power of ten,
// at least 1) giving about intervals ticks up to max, and the axis top (the
// first multiple of the interval at or above max). A max that is not a
// positive finite number gives 1, 1.
func niceScale(hi float64, intervals int) (step, top float64) {
	if !(hi > 0) || math.IsInf(hi, 0) {
		return 1, 1
	}
	raw := hi / float64(intervals)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / mag; {
	case f <= 1:
		step = mag
	case f <= 2:
		step = 2 * mag
	case f <= 5:
		step = 5 * mag
	default:
		step = 10 * mag
	}
	step = max(step, 1)
	return step, math.Ceil(hi/step) * step
}

// Label layout: an estimate of the width of a character of the 11-unit font
// (generous, so estimated widths are upper bounds) and the least space
// between two x-axis labels.
const (
	fontSize  = 11
	charW     = 0.62 * fontSize
	labelGap  = 8
	dayLength = 24 * time.Hour
)

// textW estimates the width of s in the chart's font.
func textW(s string) float64 { return float64(utf8.RuneCountInString(s)) * charW }

// thinSteps are the label intervals (in buckets) tried in order for hourly
// and daily series: they fall on round hours (00:00, 06:00, ...) and days
// (every Monday for multiples of 7).
var (
	hourSteps = []int{1, 2, 3, 4, 6, 12, 24, 48, 72, 168, 336, 672}
	daySteps  = []int{1, 2, 3, 7, 14, 28, 56, 91, 182, 364}
)

// labelEvery is the least label interval k (in buckets) such that labels
// k slots apart, each at most w wide, leave labelGap between them.
func labelEvery(slot, w float64, step time.Duration) int {
	need := (w + labelGap) / slot
	if !(need > 1) {
		return 1
	}
	// Buckets of several hours (dividing a day) or days (merged bars) take
	// the round intervals that are whole multiples of them.
	var steps []int
	unit := 1
	switch {
	case step > 0 && step%dayLength == 0:
		steps, unit = daySteps, int(step/dayLength)
	case step > 0 && step%time.Hour == 0 && dayLength%step == 0:
		steps, unit = hourSteps, int(step/time.Hour)
	}
	for _, s := range steps {
		if s%unit == 0 && float64(s/unit) >= need {
			return s / unit
		}
	}
	if need > MaxBuckets {
		return MaxBuckets
	}
	return int(math.Ceil(need))
}

// aligned reports whether bucket start t (of size step, labelled in loc) is
// on a label boundary of interval k buckets: local hours divisible by k
// (midnights for k >= 24), and for days every k-th day, Mondays when k is a
// multiple of 7.
func aligned(t time.Time, step time.Duration, loc *time.Location, k int) bool {
	if k <= 1 {
		return true
	}
	_, off := t.In(loc).Zone()
	sec := int64(step / time.Second)
	if sec <= 0 {
		return true
	}
	u := t.Unix() + int64(off)
	idx := u / sec
	if u%sec < 0 {
		idx--
	}
	if step == dayLength && k%7 == 0 {
		idx += 3 // 1970-01-01 was a Thursday: day 4 is a Monday
	}
	m := idx % int64(k)
	return m == 0
}
