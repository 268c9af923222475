package console

import (
	"errors"
	"net/http"

	"github.com/civicgate/civicgate/modules/console/consolestore"
)

// The sign-in page, one-time links and sign-out. A link is opened with GET,
// which only shows a button: the link is used by the POST that button sends,
// so a mail scanner or link preview that fetches the URL cannot use it up.

func (h *Handler) signinPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "signin", view{Title: "Sign in", Data: map[string]any{"OIDC": h.oidc != nil}})
}

func (h *Handler) linkPage(w http.ResponseWriter, r *http.Request) {
	tok := r.URL.Query().Get("token")
	if tok == "" || len(tok) > 128 {
		h.status(w, r, http.StatusBadRequest, "This sign-in link is not valid", "Ask your operator for a new link.")
		return
	}
	h.render(w, r, http.StatusOK, "link", view{Title: "Sign in", Data: map[string]any{"Token": tok}})
}

func (h *Handler) useLink(w http.ResponseWriter, r *http.Request) {
	if !parseForm(w, r) {
		return
	}
	id, err := consolestore.ConsumeLink(r.Context(), h.pool, r.PostForm.Get("token"))
	if errors.Is(err, consolestore.ErrLinkRefused) {
		h.status(w, r, http.StatusForbidden, "This sign-in link was already used or has expired",
			"Sign-in links work once, for 15 minutes. Ask your operator for a new one (civicgate console link).")
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.startSession(w, r, id, "link")
}

func (h *Handler) signOut(w http.ResponseWriter, r *http.Request, m member) {
	if err := consolestore.End(r.Context(), h.pool, m.token); err != nil {
		h.fail(w, r, err)
		return
	}
	h.audit(r, m, m.OrgID, "session.sign_out", "", "")
	setCookie(w, SessionCookie, "", -1)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

func (h *Handler) signOutEverywhere(w http.ResponseWriter, r *http.Request, m member) {
	n, err := consolestore.EndAll(r.Context(), h.pool, m.Email)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.audit(r, m, m.OrgID, "session.sign_out_everywhere", "", plural(n, "session"))
	setCookie(w, SessionCookie, "", -1)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// parseForm reads a POSTed form of at most 64 KiB of UTF-8 text without
// NUL; it answers 400 itself.
func parseForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "The form could not be read.", http.StatusBadRequest)
		return false
	}
	for _, vs := range r.PostForm {
		for _, v := range vs {
			if !storable(v) { // it would fail its query (a 500) where it is stored
				http.Error(w, "The form could not be read.", http.StatusBadRequest)
				return false
			}
		}
	}
	return true
}
