package console

import (
	"net/http"
)

// routes is every page and action of the console (docs/design.md D43 lists
// each with the rules it shares with the CLI or the API). Key changes are
// for admins (h.admin); webhook changes leave the role, like every other
// rule, to the webhooks service. Every POST passes Go's
// cross-origin protection (Sec-Fetch-Site, then Origin against Host): a form
// posted from another site is refused with 403 whatever cookies it carries.
func (h *Handler) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /static/console.css", staticFile("console.css", "text/css; charset=utf-8"))
	mux.HandleFunc("GET /static/console.js", staticFile("console.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /static/favicon.svg", staticFile("favicon.svg", "image/svg+xml"))
	mux.HandleFunc("GET /favicon.ico", staticFile("favicon.svg", "image/svg+xml"))
	mux.HandleFunc("GET /signin", h.signinPage)
	mux.HandleFunc("GET /signin/link", h.linkPage)
	mux.HandleFunc("POST /signin/link", h.useLink)
	mux.HandleFunc("GET /auth/oidc", h.oidcStart)
	mux.HandleFunc("GET /auth/callback", h.oidcCallback)
	mux.HandleFunc("POST /signout", h.signedIn(h.signOut))
	mux.HandleFunc("POST /signout/everywhere", h.signedIn(h.signOutEverywhere))
	mux.HandleFunc("GET /", h.signedIn(h.home))

	org := func(path string, page func(http.ResponseWriter, *http.Request, member, orgCtx)) {
		mux.HandleFunc(path, h.signedIn(h.inOrg(page)))
	}
	org("GET /orgs/{org}/{$}", h.overview)
	org("GET /orgs/{org}/keys", h.keysPage)
	org("POST /orgs/{org}/keys/issue", h.admin(h.issueKey))
	org("POST /orgs/{org}/keys/rotate", h.admin(h.rotateKey))
	org("GET /orgs/{org}/keys/{key}/revoke", h.admin(h.revokeConfirm))
	org("POST /orgs/{org}/keys/{key}/revoke", h.admin(h.revokeKey))
	org("GET /orgs/{org}/usage", h.usagePage)
	org("GET /orgs/{org}/usage.csv", h.usageCSV)
	org("GET /orgs/{org}/operations", h.operationsPage)
	org("GET /orgs/{org}/webhooks", h.webhooksPage)
	org("POST /orgs/{org}/webhooks", h.createEndpoint)
	org("GET /orgs/{org}/webhooks/{id}", h.endpointPage)
	org("POST /orgs/{org}/webhooks/{id}/rotate-secret", h.rotateEndpointSecret)
	org("POST /orgs/{org}/webhooks/{id}/test", h.testEndpoint)
	org("POST /orgs/{org}/webhooks/{id}/replay", h.replayEndpoint)
	org("POST /orgs/{org}/webhooks/{id}/delete", h.deleteEndpoint)
	org("GET /orgs/{org}/audit", h.auditPage)
	org("POST /orgs/{org}/status", h.operatorOnly(h.setOrgStatus))
	org("POST /orgs/{org}/tier", h.operatorOnly(h.setOrgTier))
	mux.HandleFunc("GET /orgs", h.signedIn(h.orgsPage))
	h.signupRoutes(mux) // signup_pages.go: only when sign-up is on

	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.status(w, r, http.StatusForbidden, "Request refused", "This form was sent from another site. Nothing was changed.")
	}))
	return cop.Handler(mux)
}
