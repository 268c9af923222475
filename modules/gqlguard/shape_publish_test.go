package gqlguard

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/gqlguard/analysis"
)

// shapeNext records the operation the guard published for the next handler.
type shapeNext struct{ op *contract.GraphQLOperation }

func (n *shapeNext) ServeHTTP(w http.ResponseWriter, r *http.Request) error {
	n.op = nil
	if q, ok := contract.RequestFrom(r.Context()); ok {
		if g, ok := q.GraphQL(); ok {
			op := g.Operation
			n.op = &op
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// Every admitted request publishes its operation's shape — POST, GET, a
// document resolved from a persisted hash, an event stream — and it is the
// one shape of the compiled document, not a copy per request.
func TestShapePublishedOnEveryTransport(t *testing.T) {
	g := provisioned(t, &Guard{
		Schema:           "testdata/deprecated.graphqls",
		Methods:          []string{http.MethodGet, http.MethodPost},
		PersistedQueries: &PersistedQueriesConfig{},
	})
	const doc = `query Q { books(order: TITLE, filter: {title: "secret"}) { id } }`
	wantCoords := []string{"Book.id", "BookFilter.title", "BookOrder.TITLE", "Query.books", "Query.books(filter:)", "Query.books(order:)"}
	hash := librarySHA256(doc)
	post := func(body string, headers ...string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			r.Header.Set(headers[i], headers[i+1])
		}
		return r
	}
	var first *contract.OperationShape
	for _, tc := range []struct {
		name string
		req  *http.Request
	}{
		{"POST", post(q(doc))},
		{"POST again", post(q(doc))},
		{"GET", httptest.NewRequest(http.MethodGet, "/graphql?query="+url.QueryEscape(doc), nil)},
		{"APQ register", post(q(doc, apqExt(hash, 1)))},
		{"APQ by hash", post(`{` + apqExt(hash, 1) + `}`)},
		{"event stream", post(q(`subscription S { bookAdded { id } }`), "Accept", "text/event-stream")},
	} {
		next := &shapeNext{}
		w := httptest.NewRecorder()
		if err := g.ServeHTTP(w, tc.req, next); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if next.op == nil || next.op.Shape == nil {
			t.Fatalf("%s: %d %s: no shape published", tc.name, w.Code, w.Body)
		}
		shape := next.op.Shape
		if tc.name == "event stream" {
			if !slices.Equal(shape.Coordinates, []string{"Book.id", "Subscription.bookAdded"}) {
				t.Errorf("%s: coordinates %q", tc.name, shape.Coordinates)
			}
			continue
		}
		if !slices.Equal(shape.Coordinates, wantCoords) || !slices.Equal(shape.Deprecated, []string{"BookOrder.TITLE"}) {
			t.Errorf("%s: coordinates %q, deprecated %q", tc.name, shape.Coordinates, shape.Deprecated)
		}
		if strings.Contains(shape.Normalized, "secret") || !strings.Contains(shape.Normalized, `title:""`) {
			t.Errorf("%s: normalized %s", tc.name, shape.Normalized)
		}
		if w.Header().Get("Deprecation") == "" {
			t.Errorf("%s: no Deprecation header", tc.name)
		}
		switch tc.name {
		case "POST":
			first = shape
		case "POST again":
			if shape != first {
				t.Errorf("a cache hit published another shape: computed per request")
			}
		}
	}
}

// A configured coordinate the schema does not mark @deprecated is refused
// when the guard is provisioned: a typo would otherwise never show.
func TestDeprecationsConfigRefusedAtProvision(t *testing.T) {
	for coord, want := range map[string]string{
		"Query.book":       "deprecations: Query.book is not a coordinate the schema marks @deprecated",
		"Query.nosuch":     "deprecations: Query.nosuch is not a coordinate the schema marks @deprecated",
		"BookOrder.NEWEST": "deprecations: BookOrder.NEWEST is not a coordinate the schema marks @deprecated",
	} {
		ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
		g := &Guard{Schema: "testdata/deprecated.graphqls", Deprecations: map[string]DeprecationConfig{coord: {}}}
		err := g.Provision(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", coord, err, want)
		}
	}
}

// A document naming more coordinates than an operation's shape keeps is
// admitted with MaxCoordinates of them; the rest are counted once, when
// the document is compiled, not per request.
func TestShapeCoordinatesDroppedCounted(t *testing.T) {
	var sdl, sel strings.Builder
	sdl.WriteString("type Query {\n")
	n := analysis.MaxCoordinates + 8
	for i := range n {
		fmt.Fprintf(&sdl, "  f%04d: Int\n", i)
		fmt.Fprintf(&sel, " f%04d", i)
	}
	sdl.WriteString("}\n")
	path := filepath.Join(t.TempDir(), "wide.graphqls")
	if err := os.WriteFile(path, []byte(sdl.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	g := &Guard{Schema: path, MaxRootFields: int64(n)}
	if err := g.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	dropped := func() float64 {
		families, err := ctx.GetMetricsRegistry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == "civicgate_graphql_guard_shape_coordinates_dropped_total" {
				return f.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return 0
	}
	before := dropped()
	body := q("{" + sel.String() + " }")
	for range 3 {
		next := &shapeNext{}
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		if err := g.ServeHTTP(httptest.NewRecorder(), r, next); err != nil {
			t.Fatal(err)
		}
		if next.op == nil || len(next.op.Shape.Coordinates) != analysis.MaxCoordinates {
			t.Fatalf("shape not published or not capped: %v", next.op)
		}
	}
	if got := dropped() - before; got != float64(n-analysis.MaxCoordinates) {
		t.Errorf("dropped +%v, want +%d (once per compiled document)", got, n-analysis.MaxCoordinates)
	}
}
