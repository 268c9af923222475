package library

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/civicgate/civicgate/modules/contract"
)

type callerKey struct{}

// CallerOf returns the verified gateway identity of the request that ctx
// belongs to, or nil when the engine runs without an identity secret.
func CallerOf(ctx context.Context) *contract.Claims {
	c, _ := ctx.Value(callerKey{}).(*contract.Claims)
	return c
}

// requireIdentity refuses (401) any request without a valid X-Civic-Identity
// signed with secret, and puts the verified claims in the request's context.
func requireIdentity(secret []byte, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		claims, err := contract.VerifyIdentity(secret, r.Header.Get("X-Civic-Identity"), time.Now())
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"errors":[{"message":"missing or invalid X-Civic-Identity"}]}`)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, claims)))
	})
}
