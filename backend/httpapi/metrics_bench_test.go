package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/civicgate/civicgate/backend/cursor"
	"github.com/civicgate/civicgate/backend/httpapi"
	"github.com/civicgate/civicgate/backend/store"
)

// BenchmarkMetricsMiddleware is the metrics' cost per request on the HTTP path (docs/design.md D42): the same
// handler bare and wrapped in the timing middleware, with no network and no database to hide it.
func BenchmarkMetricsMiddleware(b *testing.B) {
	codec, _ := cursor.New(cursorSecret)
	api, err := httpapi.New(httpapi.Config{Store: store.New(nil, codec), DevInsecureNoIdentity: true})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"data":{"bill":null}}`)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	})
	req := httptest.NewRequest(http.MethodPost, "/graphql", nil)
	w := httptest.NewRecorder()
	for _, c := range []struct {
		name string
		h    http.Handler
	}{{"bare", h}, {"measured", api.Measured(h)}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w.Body.Reset()
				c.h.ServeHTTP(w, req)
			}
		})
	}
}
