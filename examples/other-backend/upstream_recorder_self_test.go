package otherbackend

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/civicgate/civicgate/examples/other-backend/library"
)

// The leak check the gateway tests end with finds a key wherever the engine
// could have received one, so that its silence means something.
func TestUpstreamRecorderFindsLeaks(t *testing.T) {
	const key = "cg_live_0123456789abcdefghijklmnopqrstuv"
	for name, feed := range map[string]func(u *upstreamRecorder){
		"Authorization header": func(u *upstreamRecorder) {
			r := httptest.NewRequest(http.MethodGet, "/graphql", nil)
			r.Header.Set("Authorization", "Basic eA==")
			u.wrap(http.NotFoundHandler()).ServeHTTP(httptest.NewRecorder(), r)
		},
		"key in another header": func(u *upstreamRecorder) {
			r := httptest.NewRequest(http.MethodGet, "/graphql", nil)
			r.Header.Set("X-Api-Key", key)
			u.wrap(http.NotFoundHandler()).ServeHTTP(httptest.NewRecorder(), r)
		},
		"key's tail in a body": func(u *upstreamRecorder) {
			r := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(`{"token":"`+key[len(key)-20:]+`"}`))
			u.wrap(http.NotFoundHandler()).ServeHTTP(httptest.NewRecorder(), r)
		},
		"connection_init": func(u *upstreamRecorder) {
			u.hooks(library.Options{}).OnInit(context.Background(), transport.InitPayload{"Authorization": "Bearer x"})
		},
		"subscribe frame variables": func(u *upstreamRecorder) {
			u.hooks(library.Options{}).OnOperation(context.Background(), &graphql.OperationContext{RawQuery: "{ authors { name } }", Variables: map[string]any{"k": key}})
		},
	} {
		t.Run(name, func(t *testing.T) {
			u := &upstreamRecorder{}
			if len(u.leaks(key)) != 0 {
				t.Fatal("an empty recorder reports a leak")
			}
			feed(u)
			if len(u.leaks(key)) == 0 {
				t.Fatal("leak not found")
			}
		})
	}
}
