package document

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

func TestDeprecationHeaders(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC) }
	known := map[string]Deprecation{
		"Query.a":   {Since: day(10), Sunset: day(30), Link: "https://b.example/a"},
		"Query.b":   {Since: day(5), Sunset: day(31), Link: "https://a.example/b"},
		"Enum.C":    {Since: day(20)},
		"Input.d":   {Since: day(7), Link: "https://b.example/a"},
		"Query.e":   {Since: day(12), Sunset: day(20)},
		"Query.nil": {},
	}
	lookup := func(c string) Deprecation { return known[c] }
	for _, tc := range []struct {
		coords            []string
		dep, sunset, link []string
		none              bool
	}{
		{coords: nil, none: true},
		{coords: []string{"Query.nil"}, none: true},
		{coords: []string{"Enum.C"}, dep: []string{"@1768867200"}},
		{coords: []string{"Query.a", "Query.b", "Input.d"}, dep: []string{"@1767571200"}, sunset: []string{"Fri, 30 Jan 2026 00:00:00 GMT"},
			link: []string{`<https://a.example/b>; rel="deprecation", <https://b.example/a>; rel="deprecation"`}},
		{coords: []string{"Query.a", "Query.e"}, dep: []string{"@1768003200"}, sunset: []string{"Tue, 20 Jan 2026 00:00:00 GMT"},
			link: []string{`<https://b.example/a>; rel="deprecation"`}},
	} {
		h := deprecationHeaders(tc.coords, lookup)
		if tc.none {
			if h != nil {
				t.Errorf("%q: headers %+v, want none", tc.coords, h)
			}
			continue
		}
		if h == nil || !slices.Equal(h.Deprecation, tc.dep) || !slices.Equal(h.Sunset, tc.sunset) || !slices.Equal(h.Link, tc.link) {
			t.Errorf("%q: got %+v, want %q %q %q", tc.coords, h, tc.dep, tc.sunset, tc.link)
			continue
		}
		// A later writer's Add must not write into the shared slices.
		hdr := http.Header{}
		h.Set(hdr)
		hdr.Add("Deprecation", "@1")
		if len(h.Deprecation) != 1 || hdr.Get("Deprecation") != tc.dep[0] {
			t.Errorf("%q: an Add changed the shared value: %q", tc.coords, h.Deprecation)
		}
	}
	var none *DeprecationHeaders
	hdr := http.Header{}
	none.Set(hdr)
	if len(hdr) != 0 {
		t.Errorf("nil headers set %v", hdr)
	}
}
