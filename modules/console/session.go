package console

import (
	"errors"
	"net/http"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/console/consolestore"
)

// SessionCookie is the session cookie's name. The __Host- prefix makes the
// browser refuse it unless it is Secure, has Path=/ and no Domain: no other
// host (not even a subdomain) can set or read it.
const SessionCookie = "__Host-civicgate_session"

// oidcStateCookie carries an OIDC sign-in's state between the redirect to
// the provider and the callback (SameSite=Lax: the callback is a top-level
// navigation from the provider's site).
const oidcStateCookie = "__Host-civicgate_oidc"

func setCookie(w http.ResponseWriter, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
}

// member is the signed-in member making a request.
type member struct {
	consolestore.Session
	token string
}

// canChange reports whether the member may change things in an organization.
func (m member) canChange() bool {
	return m.Role == keystore.RoleAdmin || m.Role == keystore.RoleOperator
}

func (m member) operator() bool { return m.Role == keystore.RoleOperator }

// session returns the request's member; ok=false when there is none (the
// caller sends the sign-in page) — or when looking failed, which session has
// already answered (answered=true).
func (h *Handler) session(w http.ResponseWriter, r *http.Request) (m member, ok, answered bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return member{}, false, false
	}
	s, err := consolestore.Touch(r.Context(), h.pool, c.Value, h.timeout.idle)
	if errors.Is(err, consolestore.ErrNoSession) {
		setCookie(w, SessionCookie, "", -1)
		return member{}, false, false
	}
	if err != nil {
		h.fail(w, r, err)
		return member{}, false, true
	}
	return member{Session: s, token: c.Value}, true, false
}

// signedIn wraps a page that needs a member: without one, GETs go to the
// sign-in page and other methods get 401.
func (h *Handler) signedIn(next func(http.ResponseWriter, *http.Request, member)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		m, ok, answered := h.session(w, r)
		if answered {
			return
		}
		if !ok {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, "/signin", http.StatusSeeOther)
				return
			}
			h.status(w, r, http.StatusUnauthorized, "Your session has ended", "Sign in again to continue.")
			return
		}
		next(w, r, m)
	}
}

// startSession signs id in: a new session, its cookie, and an audit entry.
func (h *Handler) startSession(w http.ResponseWriter, r *http.Request, id consolestore.Identity, via string) {
	ctx := r.Context()
	tok, err := consolestore.NewSession(ctx, h.pool, id, via, clientAddr(r),
		consolestore.Timeouts{Idle: h.timeout.idle, Lifetime: h.timeout.lifetime})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	// Sign-ins are rare: each clears out a few sessions, links and OIDC flows
	// that ended more than a day ago, so the tables stay small without a worker.
	if err := consolestore.Prune(ctx, h.pool, 100); err != nil {
		h.logger.Warn("console: old sessions not pruned", errField(err))
	}
	h.audit(r, member{Session: consolestore.Session{Identity: id}}, id.OrgID, "session.sign_in", via, "")
	setCookie(w, SessionCookie, tok, int(h.timeout.lifetime.Seconds()))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// home sends a member to their organization, an operator to the list.
func (h *Handler) home(w http.ResponseWriter, r *http.Request, m member) {
	if r.URL.Path != "/" {
		h.notFound(w, r)
		return
	}
	if m.operator() && m.OrgID == "" {
		http.Redirect(w, r, "/orgs", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/orgs/"+m.OrgID+"/", http.StatusSeeOther)
}

// audit records a change; a failure is logged (the change is done).
func (h *Handler) audit(r *http.Request, m member, orgID, action, target, detail string) {
	err := keystore.Audit(r.Context(), h.pool, keystore.AuditEntry{Actor: m.Email, Role: m.Role, OrgID: orgID,
		Action: action, Target: target, Detail: detail, ClientAddr: clientAddr(r)})
	if err != nil {
		h.logger.Error("console: audit entry not written", errField(err))
	}
}
