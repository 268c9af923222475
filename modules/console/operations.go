package console

import (
	"cmp"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// The operations page (docs/design.md D77): what the organization's keys
// ran by GraphQL operation, the schema fields those operations read and the
// deprecated ones among them, over a window. Every figure comes from the
// usage package's answers (usage.OrganizationOperations, usage.FieldsOf,
// usage.DeprecatedUse: the code behind `civicgate usage` and
// admin.api.civic_usage), asked for the organization of the URL, which
// inOrg has already held to the member's own (an operator: any).

// operationsWindow is one of the windows the page offers.
type operationsWindow struct {
	Name  string
	Label string
	Span  time.Duration
}

var operationsWindows = []operationsWindow{
	{"24h", "Last 24 hours", 24 * time.Hour},
	{"7d", "Last 7 days", 7 * 24 * time.Hour},
	{"30d", "Last 30 days", 30 * 24 * time.Hour},
}

// operationsListed bounds each table of the page, and namedOperations the
// operations named in one deprecated coordinate's row; the rest is counted,
// and the CLI and the admin API answer in full. They keep the page under
// 100 KB (TestPagesOfABigOrganization).
const (
	operationsListed = 100
	namedOperations  = 5
)

// deprecatedRow is one row of the "Deprecated fields you use" panel: the
// first namedOperations operations are named, the others counted.
type deprecatedRow struct {
	usage.DeprecatedCoordinateUse
	Named []usage.OperationRef
	More  int
}

func deprecatedRows(uses []usage.DeprecatedCoordinateUse) []deprecatedRow {
	out := make([]deprecatedRow, len(uses))
	for i, u := range uses {
		out[i] = deprecatedRow{DeprecatedCoordinateUse: u, Named: u.Operations[:min(len(u.Operations), namedOperations)],
			More: max(len(u.Operations)-namedOperations, 0)}
	}
	return out
}

// operationRow is one operation of the organization, its keys added up by
// usage.OrganizationOperations from the organization's sums per hour
// (docs/design.md D83), never by the page.
type operationRow struct{ usage.OrganizationOperation }

// P95Text is the p95 as the page prints it: the upper bound of its
// latency bucket (usage.Latencies.Percentile), so "≤".
func (o operationRow) P95Text() string {
	if o.P95 == 0 {
		return "—"
	}
	return "≤ " + o.P95.String()
}

// operationRows orders the operations as the page lists them: most
// requests first, then by name and hash, so ties read alphabetically.
func operationRows(ops []usage.OrganizationOperation) []operationRow {
	out := make([]operationRow, len(ops))
	for i, op := range ops {
		out[i] = operationRow{op}
	}
	slices.SortStableFunc(out, func(a, b operationRow) int {
		return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Hash, b.Hash))
	})
	return out
}

// operationsPage answers GET /orgs/{org}/operations?window=24h|7d|30d. Any
// other window is refused (400), not stretched: the usage tables keep 90
// days, and the page promises exactly what it names.
func (h *Handler) operationsPage(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
	win := operationsWindows[0]
	if name := r.URL.Query().Get("window"); name != "" {
		i := slices.IndexFunc(operationsWindows, func(c operationsWindow) bool { return c.Name == name })
		if i < 0 {
			h.status(w, r, http.StatusBadRequest, "Unknown period", "Choose 24h, 7d or 30d.")
			return
		}
		win = operationsWindows[i]
	}
	ctx, now := r.Context(), time.Now()
	// o.org.ID, never a value of the request: inOrg checked it is the
	// member's organization (or the member is an operator). The three
	// answers each scan the organization's hours: asked at once, the page
	// takes the slowest one's time, not their sum (BenchmarkPages).
	args := usage.OperationsArgs{Org: o.org.ID, Since: win.Span, Now: now}
	var (
		ops                          []usage.OrganizationOperation
		fields                       []usage.FieldUsage
		deprecated                   []usage.DeprecatedCoordinateUse
		opsErr, fieldsErr, deprecErr error
		wg                           sync.WaitGroup
	)
	wg.Go(func() { ops, opsErr = usage.OrganizationOperations(ctx, h.pool, args) })
	wg.Go(func() { fields, fieldsErr = usage.FieldsOf(ctx, h.pool, args) })
	wg.Go(func() { deprecated, deprecErr = usage.DeprecatedUse(ctx, h.pool, o.org.ID, win.Span, now) })
	wg.Wait()
	for _, err := range []error{opsErr, fieldsErr, deprecErr} {
		if err != nil && !errors.Is(err, usage.ErrUnknownOrg) { // unknown: nothing counted yet
			h.fail(w, r, err)
			return
		}
	}
	rows := operationRows(ops)
	h.render(w, r, http.StatusOK, "operations", h.orgView(m, o, "operations", "Operations", map[string]any{
		"Window": win, "Windows": operationsWindows,
		"Operations": firstOf(rows), "MoreOperations": max(len(rows)-operationsListed, 0),
		"Fields": firstOf(fields), "MoreFields": max(len(fields)-operationsListed, 0),
		"Deprecated": deprecatedRows(firstOf(deprecated)), "MoreDeprecated": max(len(deprecated)-operationsListed, 0),
	}))
}

func firstOf[T any](s []T) []T { return s[:min(len(s), operationsListed)] }
