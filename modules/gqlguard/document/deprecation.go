package document

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Deprecation is what the guard tells of one deprecated schema coordinate
// in the response headers of an operation that uses it (docs/design.md
// D69): since when it is deprecated (RFC 9745 Deprecation), when it goes
// (RFC 8594 Sunset; zero: unknown) and where the migration is documented
// (RFC 9745 §3 Link rel="deprecation"; "": none).
type Deprecation struct {
	Since  time.Time
	Sunset time.Time
	Link   string
}

// DeprecationHeaders are the response header values of an operation that
// uses a deprecated coordinate, formatted once per compiled document; nil
// fields are headers not sent. The slices are shared by every response:
// their length equals their capacity, so an append by a later writer
// copies them.
type DeprecationHeaders struct {
	Deprecation []string
	Sunset      []string
	Link        []string
}

// Set sets the headers on h (a response's header map, before the upstream's
// headers are added to it).
func (d *DeprecationHeaders) Set(h http.Header) {
	if d == nil {
		return
	}
	h["Deprecation"] = d.Deprecation
	if d.Sunset != nil {
		h["Sunset"] = d.Sunset
	}
	if d.Link != nil {
		h["Link"] = d.Link
	}
}

// deprecationHeaders combines the deprecations of the coordinates an
// operation uses: the earliest Since (the operation is deprecated since its
// first part was), the earliest Sunset (it stops working when its first
// part goes), every distinct Link. nil when coords is empty or lookup is
// nil.
func deprecationHeaders(coords []string, lookup func(coordinate string) Deprecation) *DeprecationHeaders {
	if len(coords) == 0 || lookup == nil {
		return nil
	}
	var since, sunset time.Time
	var links []string
	for _, c := range coords {
		d := lookup(c)
		if !d.Since.IsZero() && (since.IsZero() || d.Since.Before(since)) {
			since = d.Since
		}
		if !d.Sunset.IsZero() && (sunset.IsZero() || d.Sunset.Before(sunset)) {
			sunset = d.Sunset
		}
		if d.Link != "" && !slices.Contains(links, d.Link) {
			links = append(links, d.Link)
		}
	}
	if since.IsZero() {
		return nil
	}
	h := &DeprecationHeaders{Deprecation: []string{"@" + strconv.FormatInt(since.Unix(), 10)}}
	if !sunset.IsZero() {
		h.Sunset = []string{sunset.UTC().Format(http.TimeFormat)}
	}
	if len(links) > 0 {
		slices.Sort(links)
		parts := make([]string, len(links))
		for i, l := range links {
			parts[i] = "<" + l + `>; rel="deprecation"`
		}
		h.Link = []string{strings.Join(parts, ", ")}
	}
	return h
}
