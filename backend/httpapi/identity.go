package httpapi

import (
	"context"
	"net/http"

	"github.com/civicgate/civicgate/modules/contract"
)

type claimsKey struct{}

// Claims returns the verified gateway identity of the request, or nil (dev mode).
func Claims(ctx context.Context) *contract.Claims {
	c, _ := ctx.Value(claimsKey{}).(*contract.Claims)
	return c
}

// requireIdentity refuses requests without a valid X-Civic-Identity assertion (missing, expired or forged)
// with 401 {"error":"Missing gateway identity"}, unless the server runs in dev mode.
func (s *Server) requireIdentity(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.DevInsecureNoIdentity {
			next.ServeHTTP(w, r)
			return
		}
		tok := r.Header.Get(contract.IdentityHeader)
		if tok == "" {
			writeBody(w, http.StatusUnauthorized, bodyMissingIdentity)
			return
		}
		claims, err := s.verified.verify(s.cfg.IdentitySecret, tok, s.cfg.Now())
		if err != nil {
			s.log.Info("refused gateway identity", "cause", err.Error())
			writeBody(w, http.StatusUnauthorized, bodyMissingIdentity)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), claimsKey{}, claims)))
	})
}
