package store

import (
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/backend/cursor"
)

// How PostgreSQL plans a page (docs/design.md D57). Planning a page costs more than running it: at the 1m scale
// the first page of bills plans in 1.0–1.3 ms and runs in 0.08 ms. An unfiltered page's best plan does not
// depend on its arguments (walk the family's order index from the cursor), so it runs as a prepared statement
// (pgx's statement cache) under plan_cache_mode=auto, and PostgreSQL settles on its generic plan after five
// executions: no planning at all from then on. A filtered page's best plan depends on the values (a congress
// with 26 bills or with 14 000, a search term in one bill or in a third of them: a generic plan for a common
// term once took 19 ms instead of 0.1 ms), so it runs as an unnamed statement, which PostgreSQL always plans
// for the values bound to it, in the same single round trip and with the same binary results
// (pgx.QueryExecModeCacheDescribe). LIMIT is a literal (a validated 2…101), so that a generic plan knows it.

// filteredExecMode is the pgx execution mode of a filtered page.
const filteredExecMode = pgx.QueryExecModeCacheDescribe

// unfilteredBindings caches unfilteredBinding per family.
var unfilteredBindings sync.Map // family → string

// unfilteredBinding is the cursor binding of a family's page without filters: every filter struct marshals to
// {} when no field is set (their fields are omitempty pointers; the budgets dataset, always set, is not).
func unfilteredBinding(family string) string {
	if b, ok := unfilteredBindings.Load(family); ok {
		return b.(string)
	}
	b := cursor.Binding(family, struct{}{})
	unfilteredBindings.Store(family, b)
	return b
}

// limitSQL is the LIMIT of a page of limit items: one more, to know whether a next page exists.
func limitSQL(limit int) string { return strconv.Itoa(limit + 1) }
