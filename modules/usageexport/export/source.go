package export

import (
	"context"
	"fmt"
	"time"
)

// Position is a place in the export's order, (hour start, key id): what has
// been exported is everything up to and including it. The zero Position is
// before every row; (hour, "") is before every key of hour.
type Position struct {
	Start time.Time
	KeyID string
}

// Page asks a Source for hours after a position.
type Page struct {
	After  Position
	Before time.Time // only hours that start before this (closed hours: see Exporter)
	OrgID  string    // "" = every organization
	Limit  int       // at most this many (> 0)
}

// Source yields the hours to export in (start, key id) order. hours.Usage
// (modules/usageexport/hours) is the one over civicgate.usage_hour; a source
// that also reads the per-operation hours fills Hour.Operations for the
// hours it returns, the paging unchanged (docs/design.md D73).
type Source interface {
	Hours(ctx context.Context, p Page) ([]Hour, error)
}

// Window reads every hour of src that starts in [from, to) — every page —
// for the command line; at most max hours (an error beyond).
func Window(ctx context.Context, src Source, from, to time.Time, orgID string, max int) ([]Hour, error) {
	var out []Hour
	after := Position{Start: from.UTC()}
	for {
		page, err := src.Hours(ctx, Page{After: after, Before: to, OrgID: orgID, Limit: min(500, max+1-len(out))})
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(out) > max {
			return nil, fmt.Errorf("export: more than %d hours in the window: narrow it (--org, --from/--to)", max)
		}
		if len(page) == 0 {
			return out, nil
		}
		last := page[len(page)-1]
		after = Position{Start: last.Start, KeyID: last.KeyID}
	}
}
