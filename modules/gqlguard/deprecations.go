package gqlguard

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/modules/gqlguard/analysis"
	"github.com/civicgate/civicgate/modules/gqlguard/document"
)

// Deprecations (docs/design.md D69): a response to an operation that uses
// a schema coordinate the SDL marks @deprecated carries RFC 9745's
// Deprecation header, and when configured RFC 8594's Sunset and a Link
// rel="deprecation". The schema says what is deprecated; the Caddyfile says
// since when, until when and where to read about it.

// DeprecationConfig is what the deprecations block tells of one
// coordinate: RFC 3339 times and an absolute http(s) URL, each optional.
type DeprecationConfig struct {
	// Since is when the coordinate was deprecated (Deprecation). Without
	// it, the moment this process first loaded a schema marking the
	// coordinate @deprecated.
	Since string `json:"since,omitempty"`
	// Sunset is when the coordinate stops working (Sunset); none: the
	// header is not sent.
	Sunset string `json:"sunset,omitempty"`
	// Link is the documentation of the deprecation (Link rel="deprecation").
	Link string `json:"link,omitempty"`
}

// deprecationsBlock reads
//
//	deprecations {
//	    <coordinate> [since <RFC3339>] [sunset <RFC3339>] [link <url>]
//	}
func (g *Guard) deprecationsBlock() caddyopt.Option {
	return caddyopt.Func(func(a *caddyopt.Args) error {
		if err := a.None(); err != nil {
			return err
		}
		d := a.Dispenser()
		g.Deprecations = map[string]DeprecationConfig{}
		for nesting := d.Nesting(); d.NextBlock(nesting); {
			coord := d.Val()
			if _, dup := g.Deprecations[coord]; dup {
				return d.Errf("graphql_guard deprecations: %s given twice", coord)
			}
			var c DeprecationConfig
			args := d.RemainingArgs()
			if len(args)%2 != 0 {
				return d.ArgErr()
			}
			for i := 0; i < len(args); i += 2 {
				var dst *string
				switch args[i] {
				case "since":
					dst = &c.Since
				case "sunset":
					dst = &c.Sunset
				case "link":
					dst = &c.Link
				default:
					return d.Errf("graphql_guard deprecations: %s: unknown setting %q (since, sunset, link)", coord, args[i])
				}
				if *dst != "" {
					return d.Errf("graphql_guard deprecations: %s: %s given twice", coord, args[i])
				}
				*dst = args[i+1]
			}
			if err := c.check(); err != nil {
				return d.Errf("graphql_guard deprecations: %s: %v", coord, err)
			}
			g.Deprecations[coord] = c
		}
		return nil
	})
}

// check refuses a time that is not RFC 3339 and a link that is not an
// absolute http(s) URL fit for a Link header.
func (c DeprecationConfig) check() error {
	_, err := c.parse()
	return err
}

func (c DeprecationConfig) parse() (document.Deprecation, error) {
	var d document.Deprecation
	var err error
	if c.Since != "" {
		if d.Since, err = time.Parse(time.RFC3339, c.Since); err != nil {
			return d, fmt.Errorf("since: want an RFC 3339 time (2026-01-31T00:00:00Z), got %q", c.Since)
		}
	}
	if c.Sunset != "" {
		if d.Sunset, err = time.Parse(time.RFC3339, c.Sunset); err != nil {
			return d, fmt.Errorf("sunset: want an RFC 3339 time (2026-01-31T00:00:00Z), got %q", c.Sunset)
		}
	}
	if c.Link != "" {
		u, err := url.Parse(c.Link)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" ||
			strings.ContainsAny(c.Link, "<>\"' \t\r\n,;") {
			return d, fmt.Errorf("link: want an absolute http(s) URL without <>\"',; or white space, got %q", c.Link)
		}
		d.Link = c.Link
	}
	if !d.Since.IsZero() && !d.Sunset.IsZero() && d.Sunset.Before(d.Since) {
		return d, errors.New("sunset is before since")
	}
	return d, nil
}

// firstDeprecated is, per schema coordinate, the moment this process first
// loaded a schema marking it @deprecated: the Deprecation date of a
// coordinate configured without since. It outlives reloads (a reload does
// not move the date) and not the process (docs/design.md D69).
var firstDeprecated sync.Map // string → time.Time

// provisionDeprecations settles what the deprecation headers say of each
// coordinate the schema marks @deprecated; a configured coordinate the
// schema does not mark is refused (a typo would otherwise never show).
func (g *Guard) provisionDeprecations(now time.Time) (func(coordinate string) document.Deprecation, error) {
	marked := analysis.DeprecatedCoordinates(g.schema.AST)
	for coord := range g.Deprecations {
		if !slices.Contains(marked, coord) {
			return nil, fmt.Errorf("deprecations: %s is not a coordinate the schema marks @deprecated", coord)
		}
	}
	known := make(map[string]document.Deprecation, len(marked))
	for _, coord := range marked {
		d, err := g.Deprecations[coord].parse()
		if err != nil {
			return nil, fmt.Errorf("deprecations: %s: %w", coord, err)
		}
		if d.Since.IsZero() {
			first, _ := firstDeprecated.LoadOrStore(coord, now.Truncate(time.Second))
			d.Since = first.(time.Time)
		}
		known[coord] = d
	}
	return func(coord string) document.Deprecation { return known[coord] }, nil
}
