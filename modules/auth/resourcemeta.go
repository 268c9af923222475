package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/modules/contract"
)

func init() {
	caddy.RegisterModule(ResourceMetadata{})
	httpcaddyfile.RegisterHandlerDirective("civic_resource_metadata", caddyopt.Handler[ResourceMetadata]())
	httpcaddyfile.RegisterDirectiveOrder("civic_resource_metadata", httpcaddyfile.Before, "basic_auth")
}

// ResourceMetadata serves this API's OAuth 2.0 Protected Resource Metadata
// (RFC 9728) from the civic_auth app's jwt block: the resource (the
// audience), the authorization server (the issuer), the scopes the tier and
// family rules name, and that tokens go in the Authorization header. Every
// 401 of civic_auth names where it is (resource_metadata), which is how MCP
// clients and other OAuth clients find out where to get a token.
//
//	handle /.well-known/oauth-protected-resource* {
//	    civic_resource_metadata
//	}
type ResourceMetadata struct {
	// ResourceName is shown to people choosing what to authorize (optional).
	ResourceName string `json:"resource_name,omitempty"`

	body []byte
}

// CaddyModule returns the Caddy module information.
func (ResourceMetadata) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.civic_resource_metadata", New: func() caddy.Module { return new(ResourceMetadata) }}
}

// protectedResource is RFC 9728 §2's document, the members civicgate fills.
type protectedResource struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

// Provision builds the document once from the civic_auth app.
func (m *ResourceMetadata) Provision(ctx caddy.Context) error {
	app, err := ctx.AppIfConfigured("civic_auth")
	if err != nil {
		return fmt.Errorf("civic_resource_metadata: the civic_auth global option (app) must be configured: %w", err)
	}
	a := app.(*App)
	if a.tokens == nil {
		return errors.New("civic_resource_metadata: civic_auth has no jwt block: there is no authorization server to name")
	}
	var scopes []string
	for _, st := range a.JWT.ScopeTiers {
		scopes = append(scopes, st[0])
	}
	for _, rs := range a.JWT.RequireScopes {
		scopes = append(scopes, rs[1])
	}
	slices.Sort(scopes)
	repl := caddy.NewReplacer()
	doc := protectedResource{
		Resource:               repl.ReplaceAll(a.JWT.Audience, ""),
		AuthorizationServers:   []string{repl.ReplaceAll(a.JWT.Issuer, "")},
		ScopesSupported:        slices.Compact(scopes),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           m.ResourceName,
	}
	if m.body, err = json.Marshal(doc); err != nil {
		return fmt.Errorf("civic_resource_metadata: %w", err)
	}
	return nil
}

// metadataWriter: public, cacheable for a while (the document changes only
// with the configuration).
var metadataWriter = contract.JSONWriter{ContentLength: true}

// ServeHTTP answers GET and HEAD with the document; anything else is 405.
func (m *ResourceMetadata) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		contract.WriteJSON(w, http.StatusMethodNotAllowed, contract.BodyMethodNotAllowed)
		return nil
	}
	w.Header().Set("Cache-Control", "public, max-age=3600")
	metadataWriter.Write(w, http.StatusOK, m.body)
	return nil
}

// UnmarshalCaddyfile reads `civic_resource_metadata [{ resource_name <name> }]`.
func (m *ResourceMetadata) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyopt.Read(d, "civic_resource_metadata", caddyopt.Block{
		"resource_name": caddyopt.String(&m.ResourceName),
	})
}

// Interface guards
var (
	_ caddy.Provisioner           = (*ResourceMetadata)(nil)
	_ caddyhttp.MiddlewareHandler = (*ResourceMetadata)(nil)
	_ caddyfile.Unmarshaler       = (*ResourceMetadata)(nil)
)
