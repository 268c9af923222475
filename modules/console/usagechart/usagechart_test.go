package usagechart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

var t0 = time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)

func row(key string, at time.Time, adm, ref, ce, se, cost int64) usage.Row {
	return usage.Row{KeyID: key, OrgID: "org", Start: at, Delta: usage.Delta{Admitted: adm, Refused: ref, ClientErrors: ce, ServerErrors: se, Cost: cost}}
}

func TestBucketHours(t *testing.T) {
	from := t0.Add(10 * time.Hour)
	rows := []usage.Row{
		row("a", from, 1, 0, 0, 0, 10),
		row("b", from.Add(30*time.Minute), 2, 1, 1, 0, 20), // a minute row, same hour
		row("a", from.Add(2*time.Hour+15*time.Minute), 4, 0, 0, 1, 40),
		row("a", from.Add(-time.Minute), 100, 0, 0, 0, 0),   // before from
		row("a", from.Add(4*time.Hour), 100, 0, 0, 0, 0),    // at to
		row("a", from.Add(-48*time.Hour), 100, 0, 0, 0, 0),  // far before
		row("a", from.Add(1000*time.Hour), 100, 0, 0, 0, 0), // far after
	}
	pts := Bucket(rows, "", from, from.Add(4*time.Hour), time.Hour)
	if len(pts) != 4 {
		t.Fatalf("got %d points, want 4", len(pts))
	}
	want := []usage.Delta{{Admitted: 3, Refused: 1, ClientErrors: 1, Cost: 30}, {}, {Admitted: 4, ServerErrors: 1, Cost: 40}, {}}
	for i, p := range pts {
		if !p.Start.Equal(from.Add(time.Duration(i)*time.Hour)) || p.Start.Location() != time.UTC {
			t.Errorf("point %d starts %v", i, p.Start)
		}
		if p.Delta != want[i] {
			t.Errorf("point %d = %+v, want %+v", i, p.Delta, want[i])
		}
	}
	pts = Bucket(rows, "a", from, from.Add(4*time.Hour), time.Hour)
	if pts[0].Delta != (usage.Delta{Admitted: 1, Cost: 10}) || pts[2].Admitted != 4 {
		t.Errorf("key a: %+v", pts)
	}
	if pts := Bucket(rows, "nobody", from, from.Add(4*time.Hour), time.Hour); len(pts) != 4 || pts[0].Delta != (usage.Delta{}) {
		t.Errorf("unknown key: %+v", pts)
	}
}

func TestBucketDays(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip(err)
	}
	from := t0.Add(5 * time.Hour) // mid-day: the first bucket starts at UTC midnight
	rows := []usage.Row{
		row("a", t0.Add(6*time.Hour), 1, 0, 0, 0, 1),
		row("a", t0.Add(23*time.Hour), 2, 0, 0, 0, 1),
		// 00:30 in Paris on Nov 25 is 23:30 UTC on Nov 24: a UTC-day bucket.
		row("a", time.Date(2026, 11, 25, 0, 30, 0, 0, paris), 4, 0, 0, 0, 1),
		row("a", t0.Add(3*24*time.Hour), 8, 0, 0, 0, 1),
	}
	pts := Bucket(rows, "", from, t0.Add(4*24*time.Hour), 24*time.Hour)
	if len(pts) != 4 || !pts[0].Start.Equal(t0) || !pts[3].Start.Equal(t0.Add(72*time.Hour)) {
		t.Fatalf("days: %+v", pts)
	}
	for i, want := range []int64{3, 4, 0, 8} {
		if pts[i].Admitted != want {
			t.Errorf("day %d admitted %d, want %d", i, pts[i].Admitted, want)
		}
	}
}

func TestBucketEdges(t *testing.T) {
	if Bucket(nil, "", t0, t0, time.Hour) != nil || Bucket(nil, "", t0, t0.Add(time.Hour), 0) != nil {
		t.Error("empty range or zero step must give nil")
	}
	if n := len(Bucket(nil, "", t0, t0.Add(90*time.Minute), time.Hour)); n != 2 {
		t.Errorf("partial last bucket: %d points", n)
	}
	pts := Bucket([]usage.Row{row("a", t0.Add(200_000*time.Hour), 1, 0, 0, 0, 0)}, "", t0, t0.Add(1<<62), time.Hour)
	if len(pts) != MaxBuckets {
		t.Errorf("huge range: %d points, want %d", len(pts), MaxBuckets)
	}
	// Buckets of 200 years: offsets past int64 nanoseconds' comfort take
	// the slow path.
	year := 365 * 24 * time.Hour
	pts = Bucket([]usage.Row{row("a", t0.Add(201*year), 7, 0, 0, 0, 0), row("a", t0.Add(-time.Hour), 1, 0, 0, 0, 0)}, "", t0, t0.Add(250*year), 200*year)
	if len(pts) != 2 || pts[1].Admitted != 7 || pts[0].Admitted != 0 {
		t.Errorf("200-year buckets: %+v", pts)
	}
}

// hourly is 24 hourly points from Nov 23 00:00 UTC, every third one empty.
func hourly() []Point {
	var rows []usage.Row
	for h := range 24 {
		if h%3 == 2 {
			continue
		}
		rows = append(rows, row("k", t0.Add(time.Duration(h)*time.Hour), int64(10+h), int64(h%2), 1, int64(h%4/3), int64(40*h)))
	}
	return Bucket(rows, "", t0, t0.Add(24*time.Hour), time.Hour)
}

// parse decodes the whole SVG, failing on any XML error, and returns the
// root's attributes and every element with its text.
type elem struct {
	name  string
	attrs map[string]string
	text  string
}

func parse(t *testing.T, svg []byte) []elem {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	var out []elem
	var stack []int
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, svg)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := elem{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			out = append(out, e)
			stack = append(stack, len(out)-1)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				out[stack[len(stack)-1]].text += string(tok)
			}
		}
	}
	if len(out) == 0 || out[0].name != "svg" {
		t.Fatalf("root is not svg")
	}
	return out
}

func render(t *testing.T, pts []Point, opt Options) ([]byte, []elem) {
	t.Helper()
	var b bytes.Buffer
	if err := SVG(&b, pts, opt); err != nil {
		t.Fatal(err)
	}
	checkSafe(t, b.Bytes())
	return b.Bytes(), parse(t, b.Bytes())
}

var numRE = regexp.MustCompile(`-?[0-9]+(\.[0-9]+)?`)

// checkSafe asserts what every chart must satisfy: no style attribute or
// element, no script, no NaN or infinity, coordinates within bounds.
func checkSafe(t *testing.T, svg []byte) {
	t.Helper()
	s := string(svg)
	for _, bad := range []string{"style=", "<style", "<script", "NaN", "Inf", "javascript:"} {
		if strings.Contains(s, bad) {
			t.Errorf("SVG contains %q", bad)
		}
	}
	for _, e := range parseQuiet(svg) {
		for _, k := range []string{"x", "y", "width", "height", "d", "points", "viewBox"} {
			for _, n := range numRE.FindAllString(e.attrs[k], -1) {
				v, err := strconv.ParseFloat(n, 64)
				if err != nil || math.Abs(v) > 5000 {
					t.Errorf("%s %s=%q: coordinate %s out of bounds", e.name, k, e.attrs[k], n)
				}
			}
		}
	}
}

func parseQuiet(svg []byte) []elem {
	var out []elem
	d := xml.NewDecoder(bytes.NewReader(svg))
	for {
		tok, err := d.Token()
		if err != nil {
			return out
		}
		if se, ok := tok.(xml.StartElement); ok {
			e := elem{name: se.Name.Local, attrs: map[string]string{}}
			for _, a := range se.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			out = append(out, e)
		}
	}
}

func find(es []elem, name string) []elem {
	var out []elem
	for _, e := range es {
		if e.name == name {
			out = append(out, e)
		}
	}
	return out
}

func TestSVGAccessible(t *testing.T) {
	pts := hourly()
	_, es := render(t, pts, Options{Title: "Usage of key k"})
	root := es[0]
	if root.attrs["role"] != "img" || root.attrs["width"] != "100%" || root.attrs["viewBox"] != "0 0 720 240" {
		t.Errorf("root attributes %v", root.attrs)
	}
	ids := map[string]elem{}
	for _, e := range es {
		if id := e.attrs["id"]; id != "" {
			ids[id] = e
		}
	}
	labelled := strings.Fields(root.attrs["aria-labelledby"])
	if len(labelled) != 2 || ids[labelled[0]].name != "title" || ids[labelled[1]].name != "desc" {
		t.Fatalf("aria-labelledby %q does not name the title and desc", root.attrs["aria-labelledby"])
	}
	if es[1].name != "title" || es[1].text != "Usage of key k" || es[2].name != "desc" {
		t.Errorf("first children %v %v", es[1], es[2])
	}
	var total usage.Delta
	nonEmpty := 0
	for _, p := range pts {
		total = total.Plus(p.Delta)
		if p.Delta != (usage.Delta{}) {
			nonEmpty++
		}
	}
	_, errs, _ := split(total)
	wantDesc := "24 hours: " + grouped(total.Admitted) + " admitted, " + grouped(total.Refused) + " refused (429), " +
		grouped(errs) + " errors, " + grouped(total.Cost) + " cost points. From Nov 23 2026 00:00 to Nov 24 2026 00:00 (UTC)."
	if !strings.HasPrefix(es[2].text, wantDesc) || !strings.Contains(es[2].text, "Busiest hour: Nov 23 21:00, 32 requests.") {
		t.Errorf("desc %q, want prefix %q", es[2].text, wantDesc)
	}
	titles := find(es, "title")[1:]
	if len(titles) != nonEmpty {
		t.Fatalf("%d bar titles for %d non-empty buckets", len(titles), nonEmpty)
	}
	// Hour 15: 25 admitted, 1 refused, 1 client and 1 server error, 600 cost.
	want := "Nov 23 15:00 — 25 admitted, 1 refused, 2 errors, 600 cost"
	found := false
	for _, ti := range titles {
		found = found || ti.text == want
		if strings.HasPrefix(ti.text, "Nov 23 02:00") {
			t.Errorf("empty bucket has a title: %q", ti.text)
		}
	}
	if !found {
		t.Errorf("no bar title %q in %v", want, titles)
	}
	if len(find(es, "text")) < 8 {
		t.Error("missing legend or axis labels")
	}
}

func TestSVGDescExample(t *testing.T) {
	pts := Bucket([]usage.Row{row("k", t0.Add(15*time.Hour), 1234, 5, 2, 1, 9000)}, "k", t0, t0.Add(24*time.Hour), time.Hour)
	_, es := render(t, pts, Options{})
	if want := "24 hours: 1 234 admitted, 5 refused (429), 3 errors, 9 000 cost points."; !strings.HasPrefix(es[2].text, want) {
		t.Errorf("desc %q, want prefix %q", es[2].text, want)
	}
	if es[1].text != DefaultTitle {
		t.Errorf("default title %q", es[1].text)
	}
}

func TestSVGEscapesHostileText(t *testing.T) {
	hostile := `<script>alert(1)</script>"'&` + "\x00\x1b"
	svg, es := render(t, hourly(), Options{Title: hostile, ID: `x"><script>alert(1)</script>`})
	if bytes.Contains(bytes.ToLower(svg), []byte("<script")) {
		t.Fatal("output contains <script")
	}
	if !strings.HasPrefix(es[1].text, `<script>alert(1)</script>"'&`) {
		t.Errorf("title round-trips as %q", es[1].text)
	}
	if id := es[1].attrs["id"]; id != "xscriptalert1script-title" {
		t.Errorf("id %q", id)
	}
	// A hostile location name reaches the desc.
	_, es = render(t, hourly(), Options{Location: time.FixedZone("<script>", 3600)})
	if !strings.Contains(es[2].text, "(<script>)") {
		t.Errorf("desc %q", es[2].text)
	}
}

func TestSVGEmpty(t *testing.T) {
	zero := Bucket(nil, "", t0, t0.Add(24*time.Hour), time.Hour)
	for name, pts := range map[string][]Point{"nil": nil, "zero": zero} {
		svg, es := render(t, pts, Options{})
		if !bytes.Contains(svg, []byte(EmptyText)) || !strings.Contains(es[2].text, EmptyText) {
			t.Errorf("%s: no %q in\n%s", name, EmptyText, svg)
		}
		if n := len(find(es, "title")); n != 1 {
			t.Errorf("%s: %d titles", name, n)
		}
	}
}

func TestSVGHugeValues(t *testing.T) {
	var rows []usage.Row
	for h := range 168 {
		rows = append(rows, row("k", t0.Add(time.Duration(h)*time.Hour), 1e12, 1e12, 3e11, 2e11, 1e12))
	}
	rows = append(rows, row("k", t0.Add(time.Hour), -5, 0, 10, 0, -3)) // inconsistent counts clamp
	pts := Bucket(rows, "", t0, t0.Add(168*time.Hour), time.Hour)
	svg, es := render(t, pts, Options{Width: 1, Height: 1e9})
	if es[0].attrs["viewBox"] != "0 0 360 2000" {
		t.Errorf("viewBox %q", es[0].attrs["viewBox"])
	}
	if !bytes.Contains(svg, []byte("4 000 000 000 000 admitted")) { // 4 hours a bar at this width
		t.Error("huge counts missing from tooltips")
	}
	// Only ones and zeros: the scales must not divide by zero.
	render(t, Bucket([]usage.Row{row("k", t0, 1, 0, 0, 0, 0)}, "", t0, t0.Add(time.Hour), time.Hour), Options{})
}

// checkLabels asserts the x labels neither overlap nor leave the viewBox.
func checkLabels(t *testing.T, name string, pts []Point, opt Options, wantMin int) []xLabel {
	t.Helper()
	c := newChart(pts, opt)
	c.layout(30)
	ls := c.xLabels()
	if len(ls) < wantMin {
		t.Errorf("%s: only %d labels", name, len(ls))
	}
	for i, l := range ls {
		if l.x-textW(l.text)/2 < 0 || l.x+textW(l.text)/2 > c.w {
			t.Errorf("%s: label %q at %v outside the viewBox", name, l.text, l.x)
		}
		if i > 0 {
			p := ls[i-1]
			if gap := l.x - p.x - (textW(l.text)+textW(p.text))/2; gap < labelGap {
				t.Errorf("%s: labels %q and %q overlap (gap %.1f)", name, p.text, l.text, gap)
			}
		}
	}
	return ls
}

func TestXLabelThinning(t *testing.T) {
	day := 24 * time.Hour
	d90 := Bucket(nil, "", t0.Add(-89*day), t0.Add(day), day)
	h24 := Bucket(nil, "", t0, t0.Add(day), time.Hour)
	h168 := Bucket(nil, "", t0, t0.Add(7*day), time.Hour)
	for _, w := range []int{360, 720, 1440} {
		ls := checkLabels(t, "90 days", d90, Options{Width: w}, 3)
		if w == 720 && (ls[0].text != "Aug 31" || ls[1].text != "Sep 7" || len(ls) != 12) { // Mondays
			t.Errorf("90 days: %v", ls)
		}
		ls = checkLabels(t, "24 hours", h24, Options{Width: w}, 4)
		if w == 720 && (len(ls) != 12 || ls[0].text != "Nov 23" || ls[1].text != "02:00") {
			t.Errorf("24 hours: %v", ls)
		}
		ls = checkLabels(t, "168 hours", h168, Options{Width: w}, 3)
		if w == 720 && (len(ls) != 7 || ls[0].text != "Nov 23") { // midnights, as dates
			t.Errorf("168 hours: %v", ls)
		}
	}
	ny, err := time.LoadLocation("America/New_York")
	if err == nil { // a DST change in the range: spacing still holds
		dst := Bucket(nil, "", time.Date(2026, 3, 7, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC), time.Hour)
		ls := checkLabels(t, "dst", dst, Options{Location: ny, Width: 800}, 2) // one bar an hour
		if ls[0].text != "Mar 7" {
			t.Errorf("New York labels %v", ls)
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteErrors(t *testing.T) {
	if err := SVG(failWriter{}, hourly(), Options{}); err == nil {
		t.Error("SVG hid a write error")
	}
	if err := CSV(failWriter{}, []usage.Row{row("k", t0, 1, 0, 0, 0, 0)}, true); err == nil {
		t.Error("CSV hid a write error")
	}
	if h := HTML(hourly(), Options{}); !strings.HasPrefix(string(h), "<svg") {
		t.Error("HTML")
	}
}

func TestPeriod(t *testing.T) {
	day := 24 * time.Hour
	for _, c := range []struct {
		n     int
		step  time.Duration
		daily bool
		want  string
	}{{24, time.Hour, false, "24 hours"}, {168, time.Hour, false, "7 days"}, {90, day, true, "90 days"}, {1, day, true, "1 day"}, {1, time.Hour, false, "1 hour"}, {90, time.Minute, false, "90 minutes"}} {
		if got := period(c.n, c.step, c.daily); got != c.want {
			t.Errorf("period(%d, %v) = %q, want %q", c.n, c.step, got, c.want)
		}
	}
}

// TestSVGBarsUseTheWidth: a week of hourly buckets (the console's 7-day
// chart) is drawn with bars wide enough to see — at least 6 viewBox units,
// where one bar per hour left 3.2 — that together span the plot, whether
// every hour or a single one has usage; the sums survive the merge.
func TestSVGBarsUseTheWidth(t *testing.T) {
	bar := regexp.MustCompile(`M([0-9.]+) [0-9.]+h([0-9.]+)v`)
	for _, tc := range []struct {
		name  string
		hours []int
	}{
		{"every hour", func() []int {
			var hs []int
			for h := range 168 {
				hs = append(hs, h)
			}
			return hs
		}()},
		{"one hour", []int{167}},
	} {
		var rows []usage.Row
		for _, h := range tc.hours {
			rows = append(rows, row("k", t0.Add(time.Duration(h)*time.Hour), 100, 0, 0, 0, 1))
		}
		pts := Bucket(rows, "", t0, t0.Add(168*time.Hour), time.Hour)
		svg, _ := render(t, pts, Options{Step: time.Hour})
		ok := regexp.MustCompile(`<path fill="` + colOK + `" d="([^"]*)"`).FindSubmatch(svg)
		if ok == nil {
			t.Fatalf("%s: no bars", tc.name)
		}
		bars := bar.FindAllSubmatch(ok[1], -1)
		first, last := 1e9, 0.0
		for _, b := range bars {
			x, _ := strconv.ParseFloat(string(b[1]), 64)
			w, _ := strconv.ParseFloat(string(b[2]), 64)
			if w < 6 {
				t.Errorf("%s: a bar %.1f units wide at x=%.1f, want at least 6 of the 720", tc.name, w, x)
			}
			first, last = min(first, x), max(last, x+w)
		}
		if tc.name == "every hour" && (len(bars) != 84 || first > 44+7 || last < 710-7) {
			t.Errorf("%s: %d bars from x=%.1f to %.1f, want 84 (2 hours each) spanning the plot 44..710", tc.name, len(bars), first, last)
		}
		if !bytes.Contains(svg, []byte("Busiest 2 hours: ")) {
			t.Errorf("%s: the desc does not speak of the 2-hour bars", tc.name)
		}
		if total := strings.Count(string(svg), "200 admitted,"); tc.name == "every hour" && total != 84 {
			t.Errorf("%s: %d tooltips of 200 admitted (two hours of 100), want 84", tc.name, total)
		}
	}
}
