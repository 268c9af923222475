package gqlguard

import (
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/civicgate/civicgate/modules/contract"
)

// callerStandIn records a caller in the request value as civic_auth does
// (contract.Request.SetCredential), from request headers, so that the
// guard's tier and key rules can be tested without a key store: X-Test-Key
// (key id), X-Test-Tier, X-Test-Org. A request with none of them has no
// caller. The guard reads the caller only typed (docs/design.md D61).
type callerStandIn struct{}

func (callerStandIn) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.test_caller", New: func() caddy.Module { return new(callerStandIn) }}
}

func (callerStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	c := contract.Caller{KeyID: r.Header.Get("X-Test-Key"), Tier: r.Header.Get("X-Test-Tier"), Org: r.Header.Get("X-Test-Org")}
	if c.KeyID == "" && c.Tier == "" && c.Org == "" {
		return next.ServeHTTP(w, r)
	}
	attached, q := contract.AttachRequest(r)
	q.SetCredential(&c, q.Bearer(), q.Watcher())
	// In place: the test's respond reads {http.request.body}, which Caddy's
	// replacer reads from the request it started with, where the guard
	// leaves the checked body.
	*r = *attached
	return next.ServeHTTP(w, r)
}

func init() {
	caddy.RegisterModule(callerStandIn{})
	httpcaddyfile.RegisterHandlerDirective("test_caller", func(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
		h.Next()
		return callerStandIn{}, nil
	})
}
