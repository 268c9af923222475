package console

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/console/consolestore"
	"github.com/civicgate/civicgate/modules/console/outbox"
	"github.com/civicgate/civicgate/modules/ratelimit"
)

// The sign-up pages (docs/design.md D74): the form, the verification link,
// the first key, and the operators' queue in approve mode. Every POST passes
// the console's cross-origin protection (routes.go).

// Bounds of the form's fields (characters).
const (
	maxSignupName = 100
	maxSignupOrg  = 100
	maxSignupUse  = 1000
)

// signupRoutes adds the sign-up pages when sign-up is on.
func (h *Handler) signupRoutes(mux *http.ServeMux) {
	if h.signup == nil {
		return
	}
	mux.HandleFunc("GET /signup", h.signupForm)
	mux.HandleFunc("POST /signup", h.signupSubmit)
	mux.HandleFunc("GET /signup/verify", h.signupLinkPage)
	mux.HandleFunc("POST /signup/verify", h.signupUseLink)
	mux.HandleFunc("GET /signups", h.signedIn(h.signupQueue))
	mux.HandleFunc("POST /signups/{id}/{decision}", h.signedIn(h.signupDecide))
}

type signupForm struct {
	Email, Name, Organization, IntendedUse string
	Terms                                  bool
}

func (h *Handler) signupView(code int, f signupForm, errText string) (int, view) {
	return code, view{Title: "Sign up", Error: errText, Data: map[string]any{
		"Form": f, "TermsURL": h.signup.TermsURL, "Approve": h.signup.Mode == SignupApprove}}
}

func (h *Handler) signupForm(w http.ResponseWriter, r *http.Request) {
	code, v := h.signupView(http.StatusOK, signupForm{}, "")
	h.render(w, r, code, "signup", v)
}

// checkSignupForm returns the form's refusal, "" when it is acceptable.
func checkSignupForm(f signupForm) string {
	switch {
	case outbox.CheckAddress(f.Email) != nil:
		return "Enter one email address, like name@example.org."
	case f.Name == "" || !oneLine(f.Name, maxSignupName):
		return fmt.Sprintf("Enter your name: one line of at most %d characters.", maxSignupName)
	case f.Organization == "" || !oneLine(f.Organization, maxSignupOrg):
		return fmt.Sprintf("Enter your organization: one line of at most %d characters.", maxSignupOrg)
	case f.IntendedUse == "" || len([]rune(f.IntendedUse)) > maxSignupUse ||
		strings.ContainsFunc(f.IntendedUse, func(r rune) bool { return !unicode.IsPrint(r) && r != '\n' && r != '\r' && r != '\t' }):
		return fmt.Sprintf("Say how you will use the API, in at most %d characters.", maxSignupUse)
	case !f.Terms:
		return "Accept the terms of use to sign up."
	}
	return ""
}

// oneLine reports whether s is at most n printable characters
// (unicode.IsPrint, as the key store's names: no CR, LF or other control
// character, no bidi override or line separator).
func oneLine(s string, n int) bool {
	return len([]rune(s)) <= n && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) })
}

func (h *Handler) signupSubmit(w http.ResponseWriter, r *http.Request) {
	if !parseForm(w, r) {
		return
	}
	s := h.signup
	f := signupForm{Email: strings.TrimSpace(r.PostForm.Get("email")), Name: strings.TrimSpace(r.PostForm.Get("name")),
		Organization: strings.TrimSpace(r.PostForm.Get("organization")),
		IntendedUse:  strings.TrimSpace(r.PostForm.Get("intended_use")), Terms: r.PostForm.Get("terms") == "accept"}
	if msg := checkSignupForm(f); msg != "" {
		code, v := h.signupView(http.StatusBadRequest, f, msg)
		h.render(w, r, code, "signup", v)
		return
	}
	email := strings.ToLower(f.Email)
	_, domain, _ := strings.Cut(email, "@")
	if !s.domainAllowed(domain) {
		code, v := h.signupView(http.StatusForbidden, f, "Sign-up is not open to addresses of this domain.")
		h.render(w, r, code, "signup", v)
		return
	}
	// Every limit counts every submission, whether or not the address is known.
	ip := limitAddr(clientAddr(r))
	for _, l := range []struct {
		check func() (bool, time.Duration, error)
	}{
		{func() (bool, time.Duration, error) { return s.byIP.Take(r.Context(), ip) }},
		{func() (bool, time.Duration, error) { return s.byAddr.Take(r.Context(), email) }},
		{func() (bool, time.Duration, error) { return s.byDom.Take(r.Context(), domain) }},
	} {
		ok, retry, err := l.check()
		if errors.Is(err, ratelimit.ErrLimitStoreDown) { // on_store_error closed, Redis unusable
			h.status(w, r, http.StatusServiceUnavailable, "Sign-up is busy", "Sign-up cannot count requests right now. Try again later.")
			return
		}
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if !ok {
			w.Header().Set("Retry-After", fmt.Sprint(int64(math.Ceil(retry.Seconds()))))
			h.status(w, r, http.StatusTooManyRequests, "Too many sign-ups",
				"Too many sign-ups came from here or for this address or domain. Try again later.")
			return
		}
	}
	ctx := r.Context()
	taken, err := consolestore.AddressHasSignup(ctx, h.pool, email)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	spec := consolestore.SignupSpec{Email: email, Name: f.Name, Organization: f.Organization,
		IntendedUse: f.IntendedUse, TermsURL: s.TermsURL, ClientAddr: clientAddr(r)}
	if taken {
		// The same answer as for a new address: only the mailbox learns more.
		err = outbox.Enqueue(ctx, h.pool, alreadyMail(s, email), s.mail.MaxPendingMails())
	} else {
		err = consolestore.CreateSignup(ctx, h.pool, spec, func(tx pgx.Tx, id, token string) error {
			return outbox.Enqueue(ctx, tx, verifyMail(s, email, f.Name, token), s.mail.MaxPendingMails())
		})
	}
	if errors.Is(err, outbox.ErrFull) {
		h.status(w, r, http.StatusServiceUnavailable, "Sign-up is busy", "Too many mails are waiting to be sent. Try again later.")
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	s.mail.Wake()
	// Sign-ups are rare: each clears a few requests that ended long ago, so the
	// table stays small without a worker (as sign-ins do for sessions).
	if err := consolestore.PruneSignups(ctx, h.pool, 100); err != nil {
		h.logger.Warn("console: old sign-up requests not pruned", errField(err))
	}
	detail := "new"
	if taken {
		detail = "address already signed up"
	}
	h.auditSignup(r, email, "", "signup.request", domain, detail)
	h.render(w, r, http.StatusOK, "signup_sent", view{Title: "Check your mail", Data: map[string]any{"Email": email}})
}

// limitAddr is the per-IP limit's key for a client address: the address, or
// for IPv6 its /64 (one subscriber's usual allocation, which an abuser would
// otherwise walk through).
func limitAddr(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		addr = host
	}
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	ip = ip.Unmap()
	if ip.Is6() {
		return netip.PrefixFrom(ip, 64).Masked().String()
	}
	return ip.String()
}

func (h *Handler) signupLinkPage(w http.ResponseWriter, r *http.Request) {
	tok := r.URL.Query().Get("token")
	if tok == "" || len(tok) > 128 {
		h.status(w, r, http.StatusBadRequest, "This sign-up link is not valid", "Sign up again for a new link.")
		return
	}
	h.render(w, r, http.StatusOK, "signup_link", view{Title: "Sign up", Data: map[string]any{"Token": tok}})
}

// signupUseLink uses a verification link or an approval mail's link: in
// open mode, or approved, it makes the organization, its first key and an
// admin session, and shows the key once.
func (h *Handler) signupUseLink(w http.ResponseWriter, r *http.Request) {
	if !parseForm(w, r) {
		return
	}
	s := h.signup
	ctx := r.Context()
	var issued keystore.Issued
	var orgName string
	su, err := consolestore.ClaimSignupLink(ctx, h.pool, r.PostForm.Get("token"),
		func(tx pgx.Tx, su consolestore.Signup) (string, string, error) {
			if su.Status == consolestore.SignupPending {
				taken, err := consolestore.AddressHasSignup(ctx, tx, su.Email)
				if err != nil {
					return "", "", err
				}
				if taken {
					return "", "", consolestore.ErrAddressTaken
				}
				if s.Mode == SignupApprove {
					return consolestore.SignupAwaiting, "", nil
				}
			}
			var err error
			if orgName, err = h.freeOrgName(r, su.Organization); err != nil {
				return "", "", err
			}
			issued, err = keystore.IssueWith(ctx, h.pool, keystore.IssueSpec{Org: orgName, Tier: s.Tier, Env: "live",
				Lifecycle: keystore.Lifecycle{Name: "first key", Labels: map[string]string{"source": "signup"}}})
			if err != nil {
				return "", "", err
			}
			return consolestore.SignupDone, issued.OrgID, nil
		})
	switch {
	case errors.Is(err, consolestore.ErrSignupRefused):
		h.status(w, r, http.StatusForbidden, "This sign-up link was already used or has expired",
			"Sign-up links work once, for 24 hours. Sign up again for a new one.")
		return
	case errors.Is(err, consolestore.ErrAddressTaken):
		h.status(w, r, http.StatusConflict, "This address already has an organization",
			"An address signs up one organization. Ask your operator for a sign-in link to it.")
		return
	case err != nil:
		h.fail(w, r, err)
		return
	}
	if su.Status == consolestore.SignupAwaiting {
		h.auditSignup(r, su.Email, "", "signup.verify", su.ID, "awaiting approval")
		h.render(w, r, http.StatusOK, "signup_waiting", view{Title: "Address verified", Data: map[string]any{"Email": su.Email}})
		return
	}
	h.auditSignup(r, su.Email, su.OrgID, "signup.verify", su.ID, "organization "+orgName)
	h.auditSignup(r, su.Email, su.OrgID, "key.issue", issued.ID, "live "+s.Tier+" name=\"first key\" source=signup")
	id := consolestore.Identity{Email: su.Email, OrgID: su.OrgID, Role: keystore.RoleAdmin}
	tok, err := consolestore.NewSession(ctx, h.pool, id, "link", clientAddr(r),
		consolestore.Timeouts{Idle: h.timeout.idle, Lifetime: h.timeout.lifetime})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.auditSignup(r, su.Email, su.OrgID, "session.sign_in", "signup", "")
	setCookie(w, SessionCookie, tok, int(h.timeout.lifetime.Seconds()))
	curl := "curl -H 'Authorization: Bearer " + issued.Key + "' -H 'Content-Type: application/json' " +
		`-d '{"query":"{ __typename }"}' ` + s.APIURL
	h.render(w, r, http.StatusOK, "signup_key", view{Title: "Your first key", Data: map[string]any{
		"OrgID": su.OrgID, "OrgName": orgName, "KeyID": issued.ID, "Key": issued.Key, "Curl": curl}})
}

// freeOrgName is a new organization's name from the form's: letters and
// digits, then a random suffix, so no sign-up names (and so joins) an
// existing organization.
func (h *Handler) freeOrgName(r *http.Request, asked string) (string, error) {
	var b strings.Builder
	for _, c := range strings.ToLower(asked) {
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			b.WriteRune(c)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
		if b.Len() >= 40 {
			break
		}
	}
	base := strings.Trim(b.String(), "-")
	if base == "" {
		base = "org"
	}
	for range 5 {
		name := base + "-" + randomSuffix(6)
		_, err := consolestore.OrgByName(r.Context(), h.pool, name)
		if errors.Is(err, consolestore.ErrNotFound) {
			return name, nil
		}
		if err != nil {
			return "", err
		}
	}
	return "", errors.New("console: no free organization name")
}

func randomSuffix(n int) string {
	const alphabet = "abcdefghijkmnpqrstuvwxyz23456789"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// auditSignup writes a sign-up's audit entry: the actor is the address (role
// "signup" until it is an admin).
func (h *Handler) auditSignup(r *http.Request, email, orgID, action, target, detail string) {
	role := "signup"
	if orgID != "" {
		role = keystore.RoleAdmin
	}
	h.audit(r, member{Session: consolestore.Session{Identity: consolestore.Identity{Email: email, Role: role}}}, orgID, action, target, detail)
}
