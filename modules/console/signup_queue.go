package console

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/modules/console/consolestore"
	"github.com/civicgate/civicgate/modules/console/outbox"
)

// The operators' queue of sign-up requests in approve mode
// (docs/design.md D74): operator members only (others get 404); a decision
// and its mail commit together.

// signupQueue is the operators' list of requests awaiting a decision.
func (h *Handler) signupQueue(w http.ResponseWriter, r *http.Request, m member) {
	if !m.operator() {
		h.notFound(w, r)
		return
	}
	list, err := consolestore.ListSignups(r.Context(), h.pool, consolestore.SignupAwaiting, pageSize)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v := view{Title: "Sign-up requests", Member: &m, Nav: "signups", Data: map[string]any{"Signups": list}}
	switch r.URL.Query().Get("done") {
	case "approved":
		v.Notice = "Approved: the person was mailed a link to their organization."
	case "refused":
		v.Notice = "Refused: the person was told by mail."
	}
	h.render(w, r, http.StatusOK, "signup_queue", v)
}

func (h *Handler) signupDecide(w http.ResponseWriter, r *http.Request, m member) {
	if !m.operator() {
		h.notFound(w, r)
		return
	}
	if !parseForm(w, r) {
		return
	}
	decision := r.PathValue("decision")
	if decision != "approve" && decision != "refuse" {
		h.notFound(w, r)
		return
	}
	s := h.signup
	ctx := r.Context()
	su, err := consolestore.DecideSignup(ctx, h.pool, r.PathValue("id"), decision == "approve", m.Email,
		func(tx pgx.Tx, su consolestore.Signup, token string) error {
			msg := refusedMail(s, su.Email)
			if token != "" {
				msg = approvedMail(s, su.Email, token)
			}
			return outbox.Enqueue(ctx, tx, msg, s.mail.MaxPendingMails())
		})
	if errors.Is(err, consolestore.ErrSignupRefused) {
		h.status(w, r, http.StatusConflict, "This request is not awaiting a decision", "Another operator may have decided it.")
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	s.mail.Wake()
	done := map[bool]string{true: "approved", false: "refused"}[decision == "approve"]
	h.audit(r, m, "", "signup."+decision, su.ID, su.Email)
	http.Redirect(w, r, "/signups?"+url.Values{"done": {done}}.Encode(), http.StatusSeeOther)
}
